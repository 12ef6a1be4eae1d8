"""Others' identity updates: fetched from the node between transactions, verified, kept per inbox.

Each update is applied onto the inbox's earlier ones with libxmtp's association
rules (:func:`~protocols.libraries.xmtp_identity.apply_identity_update`) before
it is stored in ``xmtp_identity_updates`` with the node's sequence id; an update
that does not apply is not kept, and neither is anything after it (the inbox's
later state cannot be trusted).  :class:`StoredUpdates` then serves them to
:mod:`protocols.libraries.xmtp_mls` inside a handler's transaction, so checking
a welcome's or a commit's members needs no network there.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from core import contract
from protocols.libraries.xmtp_identity import InboxState, Refused, apply_identity_update
from protocols.libraries.xmtp_mls import UpdateLog
from protocols.libraries.xmtp_wire.proto import associations_pb2
from protocols.xmtp.transport.node import NodeService

log = logging.getLogger("tessera.xmtp.identity_updates")

_STORED = (
    "SELECT sequence_id, server_timestamp_ns, identity_update FROM xmtp_identity_updates "
    "WHERE inbox_id = ? ORDER BY sequence_id"
)
_NEWEST = "SELECT inbox_id, max(sequence_id) FROM xmtp_identity_updates GROUP BY inbox_id"
_KEEP = (
    "INSERT INTO xmtp_identity_updates(inbox_id, sequence_id, server_timestamp_ns, identity_update) "
    "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
)


class StoredUpdates:
    """The identity updates this database keeps, as :class:`~protocols.libraries.xmtp_mls.IdentityUpdates`
    (read inside the caller's transaction)."""

    def __init__(self, db: contract.Database):
        self.db = db

    def identity_updates(self, inbox_ids: list[str]) -> dict[str, list[UpdateLog]]:
        found: dict[str, list[UpdateLog]] = {}
        for inbox_id in inbox_ids:
            logs = [_log(inbox_id, *row) for row in self.db.all(_STORED, (inbox_id,))]
            if logs:
                found[inbox_id] = logs
        return found


def _log(inbox_id: str, sequence_id: int, timestamp_ns: int, data: bytes) -> UpdateLog:
    update = associations_pb2.IdentityUpdate()
    update.ParseFromString(bytes(data))
    return UpdateLog(sequence_id=sequence_id, server_timestamp_ns=timestamp_ns, update=update)


def newest_sequence_ids(db: contract.Database) -> dict[str, int]:
    """Each kept inbox's newest sequence id."""
    return {str(inbox): int(sequence) for inbox, sequence in db.all(_NEWEST)}


def inbox_state(db: contract.Database, inbox_id: str) -> InboxState | None:
    """The inbox's state after the updates kept of it (None when none are)."""
    state: InboxState | None = None
    for entry in StoredUpdates(db).identity_updates([inbox_id]).get(inbox_id, []):
        state = apply_identity_update(state, entry.update, sequence_id=entry.sequence_id)
    return state


def refresh(runtime: contract.Runtime, node: NodeService, inbox_ids: Iterable[str]) -> int:
    """Fetch what is new of each inbox since the updates kept (network, outside any transaction), then keep
    what verifies (one transaction); returns how many updates were kept."""
    wanted = sorted(set(inbox_ids))
    if not wanted:
        return 0
    with runtime.db.read():
        known = newest_sequence_ids(runtime.db)
    fetched = node.identity_updates(wanted, after={inbox: known[inbox] for inbox in wanted if inbox in known})
    kept = 0
    with runtime.db.write():
        for inbox_id in wanted:
            kept += _keep_verified(runtime.db, inbox_id, fetched.get(inbox_id, []))
    return kept


def _keep_verified(db: contract.Database, inbox_id: str, logs: list[UpdateLog]) -> int:
    state = inbox_state(db, inbox_id)
    kept = 0
    for entry in sorted(logs, key=lambda logged: logged.sequence_id):
        try:
            state = apply_identity_update(state, entry.update, sequence_id=entry.sequence_id)
        except Refused as refused:
            log.warning(
                "inbox %s: identity update %d from the node does not verify (%s); it and later ones are not kept",
                inbox_id,
                entry.sequence_id,
                refused,
            )
            break
        if state.inbox_id != inbox_id:
            log.warning("the node answered for inbox %s with an update of inbox %s; not kept", inbox_id, state.inbox_id)
            break
        db.execute(_KEEP, (inbox_id, entry.sequence_id, entry.server_timestamp_ns, entry.update.SerializeToString()))
        kept += 1
    return kept
