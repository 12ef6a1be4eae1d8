"""This database's side of Marmot in this process: its relays, observers, opened states and checked key.

The plugin's ``open_service`` hook gives every opened app one :class:`MarmotMember`;
the ``nostr`` transport, the relay sync and ``tessera marmot`` commands ask it for
the relays (``runtime.service(MarmotMember).relays()``), and observers attach to
its hub (:func:`protocols.marmot.observe.attach`).  The app's close detaches them, and waits for the
group states' replaced version keys still being erased (docs/marmot.md, *Forward secrecy at rest*).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from core.contract import App, Runtime
from core.state import ProtocolState
from protocols.libraries import at_rest, erasable
from protocols.marmot.observe import Hub
from protocols.marmot.relays import ExclusiveUntil, NostrRelays, RelayTransport
from protocols.marmot.state.key import opened_cache


class MarmotMember:
    """One database's relay transport, observer hub, opened group states and the at-rest key checks passed."""

    def __init__(self, app: App):
        self.observers = Hub(app.runtime)
        #: Values already opened and parsed (group states above all; see ``state.store.SealedValues``).
        self.opened = opened_cache()
        self._app = app
        self._relays: list[RelayTransport] = []
        #: ``(at-rest key, sealed key check)`` pairs that opened, so the tick checks each once.
        self.keys_checked: set[tuple[bytes, bytes]] = set()
        _fill_decision_state(app)

    def relays(self) -> RelayTransport:
        """The relay transport in use: real WebSocket relays unless one was chosen with :meth:`use_relays`."""
        if not self._relays:
            self._relays.append(NostrRelays(exclusive_until=self._known_exclusive_until()))
        return self._relays[-1]

    def _known_exclusive_until(self) -> ExclusiveUntil:
        from protocols.marmot.facts import PROTOCOL
        from protocols.marmot.transport import relay_habits

        with self._app.db.read():
            return relay_habits.exclusive_until(ProtocolState(self._app.db, PROTOCOL))

    def use_relays(self, transport: RelayTransport) -> RelayTransport:
        """Publish and fetch through ``transport`` (e.g. in-memory relays) from now on."""
        self._relays = [transport]
        return transport

    @contextlib.contextmanager
    def using(self, transport: RelayTransport) -> Iterator[RelayTransport]:
        """Publish and fetch through ``transport`` inside the block only."""
        self._relays.append(transport)
        try:
            yield transport
        finally:
            self._relays.remove(transport)

    def close(self) -> None:
        self.observers.close()
        self._relays.clear()
        self.opened.clear()
        erasable.wait_for_erasures()  # closed means no replaced key is left on disk


def _fill_decision_state(app: App) -> None:
    """A database made before the handlers kept their deletions, processing records and invitations themselves
    gets them once, from its read models' rows (the ``fill`` of :mod:`.state.deletions`, :mod:`.state.seen`
    and :mod:`.state.invitations`); one whose processing records are in the hex layout of before the group
    numbers has them rewritten once (:mod:`.state.hex_records`)."""
    from protocols.marmot.errors import StateKeyError
    from protocols.marmot.state import deletions, hex_records, invitations, seen

    runtime = app.runtime
    filled = (("marmot_deletions", deletions), ("marmot_processed", seen), ("marmot_welcomes", invitations))
    for table, state in filled:
        with runtime.db.read():
            if not runtime.db.has_table(table) or state.is_filled(runtime.kv):
                continue
        try:
            with runtime.db.write():
                state.fill(runtime.db, runtime.kv, runtime.clock.now_ms())
        except StateKeyError:
            continue  # no state key here yet: nothing of the group can be decided either; filled once it is set
    with runtime.db.read():
        if hex_records.is_moved(runtime.kv):
            return
    with runtime.db.write():
        hex_records.move(runtime.db, runtime.kv, runtime.clock.now_ms())


def opened_values(runtime: Runtime) -> at_rest.OpenedCache:
    """The cache of opened values of ``runtime``'s database (pass it to ``store.load``)."""
    return runtime.service(MarmotMember).opened
