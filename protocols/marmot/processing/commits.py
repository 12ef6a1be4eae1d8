"""Commits: apply, wait, record a competitor, or roll the epoch back.

For a commit of epoch ``E`` while the group is at epoch ``S``:

- ``E > S``: it waits for epoch ``S + 1`` like any event we cannot read yet;
- ``E == S``: when events arrived after it and were not looked at yet, it
  waits until they were (once): they may be messages of ``E``, which the
  commit would push towards the end of the past-epoch window.  Then it is
  applied; the pre-commit snapshot is kept and the commit becomes the first
  candidate of ``E``'s :class:`~protocols.marmot.state.meta.EpochRecord`.
  Applying it (or rolling back) releases the group's commits held so
  (:class:`~core.intents.ReleaseArrivalWaits`): a held commit of ``E`` is now
  a competitor, weighed next while ``E`` is one epoch behind — so every commit
  that arrives while its epoch is inside the windows is judged as in time
  order, however its deliveries were batched;
- ``E < S``: it competes for ``E``.  Every valid commit for ``E`` is a
  candidate ranked by the best ``(created_at, id)`` among the outer events
  that carried it (seed 001's rule), so another wrapper of a known commit
  can move its rank.  When the ranking's head is not the applied commit the
  group rolls back: the snapshot of ``E`` is restored and the winner applied
  to it.  Otherwise the competitor lost (``commit_lost_race``) and its branch
  is kept so its events end ``EpochInvalidated`` instead of waiting forever.

The outcome depends only on the set of commits and wrappers seen, never on
the order they arrived in.  A commit for an epoch outside the window of
kept snapshots cannot be reconsidered (``commit_too_old``).
"""

from __future__ import annotations

import hashlib

from core.intents import EnqueueDeferred, EnqueueRecheck, Intent, ReleaseArrivalWaits
from core.records import Blocked, Event, Result
from protocols.libraries import mls
from protocols.marmot import facts
from protocols.marmot.facts import FailureReason
from protocols.marmot.processing import rules
from protocols.marmot.processing.item import WAITING_FOR_EPOCH, Item, epoch_key, wait_for_arrivals, wait_for_epoch
from protocols.marmot.processing.messages import mls_reason
from protocols.marmot.read.states import OuterState
from protocols.marmot.state import deletions, seen
from protocols.marmot.state.meta import Candidate, EpochRecord
from protocols.marmot.wire import group_data

#: The states of an outer event whose message a rollback takes back.
_SHOWN = (OuterState.PROCESSED, OuterState.CREATED)


def handle_commit(item: Item, header: mls.MessageHeader, message: bytes) -> Result | Blocked:
    state = item.group.state
    epoch = header.epoch
    if not state.active:
        return item.fail(FailureReason.NOT_A_MEMBER, epoch=epoch, content_type="commit")
    if epoch > state.epoch:
        return wait_for_epoch(item, state.epoch + 1, f"it commits epoch {epoch}, we are at {state.epoch}")
    digest = hashlib.sha256(message).hexdigest()
    if epoch == state.epoch:
        behind = item.ctx.arrivals_behind()
        if behind is not None:
            return wait_for_arrivals(item, behind, epoch)
        return apply(item, message, digest, epoch)
    return compete(item, message, digest, epoch)


def apply(item: Item, message: bytes, digest: str, epoch: int) -> Result:
    """Apply a commit of the current epoch, keeping the pre-commit snapshot."""
    try:
        result = rules.process_message(item.group.state, message)
    except mls.MlsError as exc:
        return item.fail(mls_reason(exc), epoch=epoch, content_type="commit")
    if not isinstance(result, mls.CommitApplied):
        return item.fail(FailureReason.INVALID_MESSAGE, epoch=epoch, content_type="commit")
    written = item.group.commit_applied(result.new_state, digest, item.outer)
    intents: list[Intent] = [
        *written.intents,
        EnqueueRecheck(WAITING_FOR_EPOCH, epoch_key(item.outer.gid, result.new_epoch)),
        # A commit held for this epoch behind later arrivals is now this one's competitor: weighed next.
        ReleaseArrivalWaits(item.outer.route),
    ]
    events = [_applied(item, result, epoch, digest, item.generation), *_welcomes(item, written.welcomes, epoch, digest)]
    return Result(events=events, intents=intents)


def _welcomes(item: Item, count: int, epoch: int, digest: str) -> list[Event]:
    """The fact of the ``count`` welcomes our own commit ``digest`` was holding back, when its write sends them."""
    return [facts.welcomes_sent(item.outer, item.generation, epoch, digest, count)] if count else []


def _applied(item: Item, result: mls.CommitApplied, epoch: int, digest: str, generation: int) -> Event:
    state = result.new_state
    return facts.about(
        facts.COMMIT_APPLIED,
        item.outer,
        generation,
        epoch=epoch,
        new_epoch=result.new_epoch,
        committer=result.committer_credential,
        added=list(result.added),
        removed=list(result.removed),
        updated=list(result.updated),
        admins=sorted(group_data.admins(state)),
        members=_members_after(result),
        we_were_removed=result.we_were_removed,
        digest=digest,
    )


def _members_after(result: mls.CommitApplied) -> int:
    """How many members the commit leaves (a removed member's state keeps the tree it was removed from)."""
    members = set(mls.member_credentials(result.new_state).values())
    if result.we_were_removed:
        members = (members - set(result.removed)) | set(result.added)
    return len(members)


def compete(item: Item, message: bytes, digest: str, epoch: int) -> Result:
    """A commit for an epoch we already left: another wrapper, a loser, too old, or a rollback."""
    meta = item.group.meta
    record = meta.record(epoch)
    if record is None:
        why = "before we joined" if epoch < meta.joined_epoch else "outside the rollback window"
        return item.fail(
            FailureReason.COMMIT_TOO_OLD, f"commit for epoch {epoch} is {why}", epoch=epoch, content_type="commit"
        )
    known = record.candidate(digest) is not None
    result: mls.CommitApplied | None = None
    if not known:
        base = item.group.snapshot(epoch)
        try:  # a forged "better" commit must not roll anything back
            processed = rules.process_message(base, message)
        except mls.MlsError as exc:
            return item.fail(mls_reason(exc), epoch=epoch, content_type="commit")
        if not isinstance(processed, mls.CommitApplied):
            return item.fail(FailureReason.INVALID_MESSAGE, epoch=epoch, content_type="commit")
        result = processed
    updated = record.seen(digest, item.outer.cursor)
    if updated.winner.digest != record.applied:
        return rollback(item, message, updated.winner, updated, result)
    if digest == record.applied:
        return item.fact(
            facts.COMMIT_REWRAPPED,
            intents=item.group.commit_seen(updated, item.outer),
            epoch=epoch,
            original_outer_id=record.applied_candidate.cursor.id,
        )
    # A new loser (only a new commit was applied above) keeps its branch and wakes the waiting events.
    loser = None if result is None else (digest, result.new_state)
    intents = item.group.commit_seen(updated, item.outer, loser)
    if result is not None:
        intents.append(EnqueueRecheck(WAITING_FOR_EPOCH, epoch_key(item.outer.gid, item.group.state.epoch + 1)))
    return item.fail(
        FailureReason.COMMIT_LOST_RACE,
        f"commit lost the race for epoch {epoch}",
        epoch=epoch,
        content_type="commit",
        intents=intents,
    )


def rollback(
    item: Item, message: bytes, winner: Candidate, record: EpochRecord, result: mls.CommitApplied | None = None
) -> Result:
    """Restore the snapshot of the record's epoch and apply ``winner`` (carried by this item);
    ``result`` is that application when :func:`compete` already made it to validate a new commit."""
    gid, epoch, old = item.outer.gid, record.epoch, item.group
    if result is None:
        try:
            processed = rules.process_message(old.snapshot(epoch), message)
        except mls.MlsError as exc:  # validated when it became a candidate; the snapshot must have changed
            return item.fail(mls_reason(exc), epoch=epoch, content_type="commit")
        if not isinstance(processed, mls.CommitApplied):
            return item.fail(FailureReason.INVALID_MESSAGE, epoch=epoch, content_type="commit")
        result = processed
    written, loser = old.rolled_back(result.new_state, record, winner, item.outer)
    generation = written.meta.generation
    changes, retry_epochs = _changes(item, epoch, winner)
    events = [
        facts.rolled_back(item.outer, epoch, loser.cursor, generation, changes),
        _applied(item, result, epoch, winner.digest, generation),
        *_welcomes(item, written.welcomes, epoch, winner.digest),
    ]
    intents: list[Intent] = [
        *written.intents,
        # Everything waiting sits on the old main's next epoch: wake it for the new branch.
        EnqueueRecheck(WAITING_FOR_EPOCH, epoch_key(gid, old.state.epoch + 1)),
        ReleaseArrivalWaits(item.outer.route),  # the commits held at the old main's epoch: weighed next
        *_requeue(item, old.kept_events(retry_epochs), generation),
        *deletions.dropped_after(item.group.values, item.outer.gid, epoch),
    ]
    return Result(events=events, intents=intents)


def _changes(item: Item, epoch: int, winner: Candidate) -> tuple[facts.Rollback, dict[str, int]]:
    """How the rollback moves each event it touches, and the epoch of each event to decide again.

    Decided from the group's records (:mod:`protocols.marmot.state.seen`) of the events decided at ``epoch``
    (its commits) and after it."""
    state, gid = item.ctx.state, item.outer.gid
    after = seen.decided_after(state, gid, epoch)
    shown = [(outer_id, record) for outer_id, record in after if record.state in _SHOWN]
    # A rumor also carried by an event of the race's epoch or before (a re-send) stays valid.
    rumors = [
        record.rumor_id
        for _, record in shown
        if record.rumor_id is not None and not seen.carried_at_or_below(state, gid, record.rumor_id, epoch, _SHOWN)
    ]
    retry = {outer_id: record.epoch for outer_id, record in after if _may_read_otherwise(record)}
    changes = facts.Rollback(
        invalidated=tuple(outer_id for outer_id, _ in shown),
        invalidated_rumors=tuple(dict.fromkeys(rumors)),
        lost_commits=tuple(seen.commits_at(state, gid, epoch)),
        won_commits=tuple(w for w in winner.wrappers if w != item.outer.id),
        dead_commits=tuple(o for o, record in after if record.state == OuterState.PROCESSED_COMMIT),
        retryable=tuple(retry),
    )
    return changes, {outer_id: at for outer_id, at in retry.items() if at is not None}


def _may_read_otherwise(record: seen.Seen) -> bool:
    """Decided on some branch in a way another branch might change: invalidated, or failed for such a reason."""
    return record.state == OuterState.EPOCH_INVALIDATED or (
        record.state == OuterState.FAILED and record.reason in facts.RETRYABLE_REASONS
    )


def _requeue(item: Item, kept: dict[str, bytes], generation: int) -> list[EnqueueDeferred]:
    """Queue the kept raw events to decide again (their records say Retryable meanwhile)."""
    return [
        EnqueueDeferred(
            raw,
            item.ctx.now_ms,
            partition_key=item.outer.route,
            idempotency_key=f"marmot:retry:{item.outer.gid}:{outer_id}:{generation}",
        )
        for outer_id, raw in kept.items()
    ]
