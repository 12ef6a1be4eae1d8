"""What one XMTP message intent costs on the database, from ``send`` to PUBLISHED and on to COMMITTED.

    python bench/xmtp_intent_cost.py

One member (one database, the in-process loopback service) creates a group
and sends one message: the figures are the write transactions begun (BEGIN
IMMEDIATE), the appends to the event log and the events they carried, and
the reads of the intent's state from the database (the intent by its id, a
group's open intents, the one whose hash a message has; a value a decision
read before in the same step is not read again).  Each
step is counted apart: ``send``, the publish pass (to PUBLISHED), the sync
pass that reads the message back (to COMMITTED).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from common import Workdir, console

from core import eventlog
from core.app import App, open_app
from core.clock import ManualClock
from core.db import Database
from core.plugins import make_plugin_manager
from core.settings import Settings
from protocols import xmtp
from protocols.libraries import at_rest
from protocols.xmtp import keypackages, publishing, queries, sync
from protocols.xmtp.private_publishing import PrivatePublisher
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.loopback import LoopbackHub

#: The functions that read an intent's state to decide something (the ones this tree has).
_READERS = (
    ("protocols.xmtp.intent_machine", "IntentBook", ("_load",)),
    ("protocols.xmtp.queries", None, ("intent", "open_intents", "first_unsettled", "intent_by_hash")),
)


def _targets() -> Iterator[tuple[Any, str]]:
    import importlib

    for module_name, class_name, names in _READERS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        owner = getattr(module, class_name) if class_name else module
        yield from ((owner, name) for name in names if hasattr(owner, name))


@contextmanager
def counting() -> Iterator[dict[str, int]]:
    """Counts of transactions, appends, events appended and intent reads while the block runs."""
    counts = {"transactions": 0, "appends": 0, "events": 0, "intent reads": 0}
    wrapped: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str, count: Callable[..., None]) -> None:
        original = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            count(*args, **kwargs)
            return original(*args, **kwargs)

        wrapped.append((owner, name, original))
        setattr(owner, name, counted)

    def bump(key: str, by: int = 1) -> None:
        counts[key] += by

    wrap(Database, "_begin_immediate", lambda *a, **k: bump("transactions"))

    def appended(db: Any, protocol: str, events: Any, *rest: Any) -> None:
        bump("appends")
        bump("events", len(events))

    for name in ("append", "append_batch"):
        wrap(eventlog, name, appended)
    for owner, name in _targets():
        wrap(owner, name, lambda *a, **k: bump("intent reads"))
    try:
        yield counts
    finally:
        for owner, name, original in reversed(wrapped):
            setattr(owner, name, original)


def open_member(work: Workdir, hub: LoopbackHub, clock: ManualClock) -> tuple[App, Any]:
    plugins = make_plugin_manager([xmtp], entry_points=False)
    app = open_app(Settings.load(env={}), plugins, enable=["xmtp"], create=True, clock=clock, path=work.db("alice"))
    app.runtime.run_command("xmtp.identity_new", {"server": "loopback"})
    with app.db.read():
        installation = Vault.of(app.db).identity().installation_id
    service = hub.connect(installation)
    keypackages.register(app.runtime, service)
    return app, service


def main() -> None:
    os.environ.setdefault("TESSERA_XMTP_STATE_KEY", at_rest.new_key_hex())
    work = Workdir()
    try:
        hub, clock = LoopbackHub(), ManualClock(1_700_000_000_000)
        app, service = open_member(work, hub, clock)
        group = os.urandom(16)
        app.runtime.run_command("xmtp.create_group", {"group_id": group.hex()})
        steps: list[tuple[str, dict[str, int]]] = []
        with counting() as counts:
            app.runtime.run_command("xmtp.send", {"group": group.hex(), "text": "one message"})
        steps.append(("send", counts))
        with counting() as counts:
            publishing.publish_pass(app.runtime, PrivatePublisher(service))
        steps.append(("publish pass (-> PUBLISHED)", counts))
        with counting() as counts:
            sync.sync_all(app.runtime, service)
        steps.append(("sync pass (-> COMMITTED)", counts))
        with app.db.read():
            states = [row.state.name for row in queries.intents(app.db)]
        app.close()
        console.print(f"the intent ends {states}")
        keys = ("transactions", "appends", "events", "intent reads")
        console.print(f"{'step':32s}" + "".join(f"{k:>14s}" for k in keys))
        for name, figures in steps:
            console.print(f"{name:32s}" + "".join(f"{figures[k]:>14d}" for k in keys))
        upto = {k: sum(f[k] for _, f in steps[:2]) for k in keys}
        total = {k: sum(f[k] for _, f in steps) for k in keys}
        console.print(f"{'send -> PUBLISHED':32s}" + "".join(f"{upto[k]:>14d}" for k in keys))
        console.print(f"{'send -> COMMITTED':32s}" + "".join(f"{total[k]:>14d}" for k in keys))
    finally:
        work.close()


if __name__ == "__main__":
    main()
