"""Commits: apply, wait, reject, recognise a rewrap, or roll the epoch back.

For a commit of epoch ``E`` while the group is at epoch ``S``:

- ``E > S``: it waits (blocked on ``marmot.epoch``) like any unreadable event;
- ``E == S``: it is applied; the pre-commit snapshot and the commit's
  ``(created_at, outer id, hash of its MLS bytes)`` are kept for ``E``;
- ``E < S``: it competes with the commit we applied for ``E``:

  * same MLS bytes (another outer event rewrapping the same commit): nothing
    changes, it is recorded ProcessedCommit;
  * not better under the cursor rule (later, or same time and larger id): it
    lost the race and is recorded Failed (``commit_lost_race``);
  * better: the group rolls back.  The snapshot kept for ``E`` is restored,
    the winner applied to it, rumors decrypted under the losing branch
    (epochs above ``E``) become EpochInvalidated, Failed events that the
    winning branch may explain become Retryable and are queued again, and one
    ``epoch_rolled_back`` fact carries both lists.

A commit whose epoch is outside the kept snapshots cannot be reconsidered
(``commit_too_old``).
"""

from __future__ import annotations

import hashlib

import protocols.mls as mls
from core.intents import EnqueueDeferred, EnqueueRecheck
from core.records import Blocked, Event, Result
from protocols.marmot import facts, group, settings
from protocols.marmot.cursor import compare
from protocols.marmot.group import CommitRecord
from protocols.marmot.item import WAITING_FOR_EPOCH, Item, wait_or_give_up
from protocols.marmot.messages import mls_reason

_INVALIDATED = (
    "SELECT outer_id, rumor_id FROM marmot_processed WHERE gid = ? AND state IN ('Processed', 'Created') "
    "AND epoch > ? AND rumor_id IS NOT NULL ORDER BY outer_created_at, outer_id"
)
_RETRYABLE = (
    "SELECT outer_id, raw FROM marmot_processed WHERE gid = ? AND state = 'Failed' "
    f"AND reason IN ({', '.join(repr(r) for r in sorted(facts.RETRYABLE_REASONS))}) "
    "AND (epoch IS NULL OR epoch > ?) AND outer_created_at >= ? AND raw IS NOT NULL "
    "ORDER BY outer_created_at, outer_id"
)


def handle_commit(item: Item, header: mls.MessageHeader, message: bytes) -> Result | Blocked:
    state = item.group.state
    epoch = header.epoch
    if not state.active:
        return item.fail("not_a_member", epoch=epoch, content_type="commit")
    if epoch > state.epoch:
        return wait_or_give_up(item, f"it commits epoch {epoch}, we are at {state.epoch}")
    digest = hashlib.sha256(message).hexdigest()
    if epoch == state.epoch:
        return apply(item, message, digest, epoch)
    return compete(item, message, digest, epoch)


def apply(item: Item, message: bytes, digest: str, epoch: int) -> Result:
    """Apply a commit of the current epoch, keeping the pre-commit snapshot."""
    try:
        result = mls.process_message(item.group.state, message)
    except mls.MlsError as exc:
        return item.fail(mls_reason(exc), epoch=epoch, content_type="commit")
    if not isinstance(result, mls.CommitApplied):
        return item.fail("invalid_message", epoch=epoch, content_type="commit")
    values, gid = item.values, item.outer.gid
    meta, dropped = item.group.meta.with_commit(epoch, CommitRecord(item.outer.cursor, digest),
                                                settings.current().snapshots)
    intents = [item.state_intent(result.new_state), group.meta_intent(values, meta)]
    if epoch not in dropped:
        intents.append(group.snapshot_intent(values, gid, epoch, item.group.snapshot_bytes))
    intents += [group.snapshot_intent(values, gid, e, None) for e in dropped if e != epoch]
    intents.append(EnqueueRecheck(WAITING_FOR_EPOCH, gid))
    return Result(events=[_applied(item, result, epoch, digest, item.generation)], intents=intents)


def _applied(item: Item, result: mls.CommitApplied, epoch: int, digest: str, generation: int) -> Event:
    state = result.new_state
    return facts.about(facts.COMMIT_APPLIED, item.outer, generation, epoch=epoch, new_epoch=result.new_epoch,
                       committer=result.committer_credential, added=list(result.added),
                       removed=list(result.removed), updated=list(result.updated), admins=sorted(result.admins),
                       members=len(state.member_credentials()), we_were_removed=result.we_were_removed,
                       digest=digest)


def compete(item: Item, message: bytes, digest: str, epoch: int) -> Result:
    """A commit for an epoch we already left: rewrap, loser, too old, or a rollback."""
    meta = item.group.meta
    record = meta.commit_for(epoch)
    if record is None or epoch not in meta.snapshots:
        why = "before we joined" if epoch < meta.joined_epoch else "outside the rollback window"
        return item.fail("commit_too_old", f"commit for epoch {epoch} is {why}", epoch=epoch,
                         content_type="commit")
    if record.digest == digest:
        return item.fact(facts.COMMIT_REWRAPPED, epoch=epoch, original_outer_id=record.cursor.id)
    if compare(item.outer.cursor, record.cursor) >= 0:
        return item.fail("commit_lost_race", f"commit lost the race for epoch {epoch}", epoch=epoch,
                         content_type="commit")
    return rollback(item, message, digest, epoch, record)


def rollback(item: Item, message: bytes, digest: str, epoch: int, loser: CommitRecord) -> Result:
    """Restore the snapshot of ``epoch``, apply the better commit, invalidate the losing branch."""
    gid = item.outer.gid
    base = group.load_snapshot(item.ctx.state, gid, epoch)
    if base is None:
        return item.fail("commit_too_old", f"no snapshot is kept for epoch {epoch}", epoch=epoch,
                         content_type="commit")
    try:
        result = mls.process_message(base, message)
    except mls.MlsError as exc:  # a forged "better" commit must not roll anything back
        return item.fail(mls_reason(exc), epoch=epoch, content_type="commit")
    if not isinstance(result, mls.CommitApplied):
        return item.fail("invalid_message", epoch=epoch, content_type="commit")
    meta, dropped = item.group.meta.rolled_back(epoch, CommitRecord(item.outer.cursor, digest))
    invalidated = item.ctx.db.all(_INVALIDATED, (bytes.fromhex(gid), epoch))
    retryable = item.ctx.db.all(_RETRYABLE, (bytes.fromhex(gid), epoch, item.outer.created_at))
    events = [
        facts.rolled_back(item.outer, epoch, loser.cursor, meta.generation, [o.hex() for o, _ in invalidated],
                          [r.hex() for _, r in invalidated], [o.hex() for o, _ in retryable]),
        _applied(item, result, epoch, digest, meta.generation),
    ]
    values = item.values
    intents = [item.state_intent(result.new_state), group.meta_intent(values, meta)]
    intents += [group.snapshot_intent(values, gid, e, None) for e in dropped]
    intents.append(EnqueueRecheck(WAITING_FOR_EPOCH, gid))
    intents += [EnqueueDeferred(raw.encode(), item.ctx.now_ms, partition_key=gid,
                                idempotency_key=f"marmot:retry:{gid}:{o.hex()}:{meta.generation}")
                for o, raw in retryable]
    return Result(events=events, intents=intents)
