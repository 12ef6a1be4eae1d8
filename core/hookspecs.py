"""The plugin contract: every hook a Tessera plugin may implement.

A plugin is a module (or object) with functions decorated by
``core.hookimpl`` whose names match the hooks below.  Built-in protocols and
pip-installed ones are found the same way, through the ``tessera.protocols``
entry-point group.  A misspelled hook name fails loudly at load time.

What the registration hooks return is declared in :mod:`core.protocol` (the
records and the callables' types) and :mod:`projectors.contract` (projectors);
the handles the core gives plugins (app, runtime, a handler's ``ctx``, the
database) are typed in :mod:`core.contract`.  Errors a
plugin raises on purpose come from :mod:`core.errors`: ``PermanentError``
(park the item), ``TransientError`` (retry it with backoff), ``DecodeError``
and ``MalformedInput`` (bad wire input, parked at once).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import apsw
    import click

    from core.contract import App
    from core.protocol import Job, LazyCommand, Protocol, Transport
    from core.records import ItemSource, OutcomeKind, StoredEvent
    from core.services import Closable
    from core.setting import Setting

hookspec = pluggy.HookspecMarker("tessera")

# --- registration ------------------------------------------------------------


@hookspec
def register_protocol() -> Protocol | None:
    """Register a protocol.

    Called once when the plugin manager builds its registry.

    :return: a :class:`core.protocol.Protocol` carrying the protocol's name,
        the package holding its ``schema.sql``, ``decode(blob) -> Envelope``,
        handlers per envelope type, commands, projectors and upcasters; or
        None when the plugin is not a protocol.
    """


@hookspec
def register_jobs() -> Sequence[Job]:  # type: ignore[empty-body]
    """Add jobs to the tick.

    Called once when the registry is built.

    :return: a list of :class:`core.protocol.Job`; each names whether it needs
        the ``tick`` lease and its order within a pass.
    """


@hookspec
def register_transports() -> Sequence[Transport]:  # type: ignore[empty-body]
    """Provide transports that publish the ``outgoing`` queue.

    :return: a list of objects with a ``name`` and ``send(runtime, item)``
        (see :class:`core.protocol.Transport`).
    """


@hookspec
def register_cli_commands(cli: click.Group) -> Sequence[LazyCommand] | None:
    """Add subcommands to the ``tessera`` command line.

    Return them as :class:`core.protocol.LazyCommand` records (name,
    ``"module:attribute"``, first line of help): the command line then imports
    a command only when it runs or shows its help, so ``tessera --help`` and
    ``tessera status`` stay fast.  A plugin may instead add a ``click``
    command to ``cli`` itself (imported at every start).

    :param cli: the root ``click.Group``; name a protocol's group after the
        protocol (``tessera marmot ...``).  Inside a command,
        ``click.get_current_context().obj.app()`` opens the database, and
        refuses (saying how to enable it) when the protocol is not enabled there.
    :return: the lazily loaded commands, or None.
    """


@hookspec
def register_settings() -> Sequence[Setting]:  # type: ignore[empty-body]
    """Declare the plugin's settings, so the core reads them with its own.

    Called when the command line starts and whenever the declared settings are
    listed (``tessera settings``) or a config file is checked; keep the module
    that declares them cheap to import.  Any plugin may declare settings, a
    protocol or not.

    :return: a list of :class:`core.setting.Setting`, each with ``section`` set
        to the plugin's name: ``[<section>] <name>`` in the config file,
        ``TESSERA_<SECTION>_<NAME>`` in the environment (or its own ``env``).
        The plugin reads their values in force with
        ``settings.sources.values(MY_SETTINGS)`` (``settings`` being the app's
        :class:`core.settings.Settings`).
    """


# --- lifecycle ---------------------------------------------------------------


@hookspec
def prepare_connection(conn: apsw.Connection) -> None:
    """Customise each new database connection.

    Called when an app's connection is opened (CLI, tick daemon, test kit),
    after its pragmas.

    :param conn: the ``apsw.Connection``; register SQL functions or
        collations here.  Do not start transactions.
    """


@hookspec
def open_service(app: App) -> Closable | None:
    """Open this plugin's service object for one opened database.

    Called once per app, after its schemas are loaded and before any command
    or tick runs; the objects close, in the reverse order of opening, when the
    app closes.  Keep here what belongs to one database: connections to a
    delivery service or relays, observers, caches.  Open network connections
    lazily (a CLI command that needs none should not wait for them).

    :param app: the opened app (:class:`core.contract.App`).
    :return: an object with ``close()``, one per type; the core's code and the
        plugin's find it with ``app.service(TheClass)`` or
        ``runtime.service(TheClass)``, typed ``TheClass``.  None when the plugin
        keeps nothing per database.
    """


# --- observability -------------------------------------------------------------
#
# Observers run after the work they observe has committed.  One that raises is
# logged (with the plugin's name) and ignored: the other plugins still hear
# about the work, and the daemon goes on.


@hookspec
def on_item_processed(
    protocol: str, source: ItemSource, item_id: int, outcome: OutcomeKind, reason: str | None
) -> None:
    """Observe each item the pipeline finished with.

    Called after the item's transaction committed.

    :param protocol: the item's protocol.
    :param source: the queue it was read from (a ``StrEnum``: compare with strings freely).
    :param item_id: its row id in that table.
    :param outcome: ``handled``, ``duplicate``, ``blocked``, ``retry``, ``parked`` or ``queued``
        (put in ``deferred`` behind an earlier item of its partition that waits for a retry).
    :param reason: why, for blocked, retry, parked and queued items.
    """


@hookspec
def on_events_committed(events: Sequence[StoredEvent]) -> None:
    """Observe events once they are durable.

    Called after every commit that appended events (never for a rollback).

    :param events: list of :class:`core.records.StoredEvent`, in seq order.
    """


@hookspec
def on_projection_failed(projection: str, seq: int, error: str) -> None:
    """Observe a projector failure that was isolated so its transaction could commit.

    Called after the commit.  The event is in the log; ``tessera rebuild
    --projection NAME`` repairs the read model once the cause is fixed.

    :param projection: projector name.
    :param seq: the event that failed.
    :param error: the exception text.
    """
