"""Tessera core: storage, the event log, the item pipeline, queues, leases and the plugin contract.

Lives here: connections and transactions (``db``), records (``records``), the
event log (``eventlog``), the pipeline and drain steps (``pipeline``,
``drain``), the pipeline's door for items plugins bring (``door``), queues and waits (``queues``, ``recheck``), intents, blobs, kv,
leases, settings, errors, the hook specifications (``hookspecs``), the
registration records (``protocol``), the plugin manager (``plugins``) and the
opened application (``app``).

May import: nothing of the project's other packages, with one exception:
``core.app`` (the composition root that opens a database) uses
``schema_loader.setup`` to load schemas; ``schema_loader`` in turn imports only
the core's storage modules, so no import cycle exists.  Plugins reach the core
through ``from core import hookimpl`` and the records above; the core finds them
through pluggy entry points and never imports them."""

import pluggy

hookimpl = pluggy.HookimplMarker("tessera")

__all__ = ["hookimpl"]
