"""Events that only a losing branch can open: recorded ``EpochInvalidated``, never waited for.

When two commits race for an epoch, the members on the losing side keep
sending for a while.  Their events open with none of the main chain's keys;
waiting for an epoch would be waiting forever.  The branch the losing commit
leads to is kept (:class:`~protocols.marmot.state.store.Branch`), so such an event is decrypted on
it and recorded as seed 001 records messages of a rolled-back epoch:
``EpochInvalidated``, the rumor kept but hidden.  This way it makes no
difference whether the losing commit was applied first and rolled back or
arrived after the winner.

The branch only reads: application messages do not advance its stored state
(so the same event decides the same way again after a rollback re-queues it),
and a key the branch already used — it was main once, and the event was
processed then — means the event was invalidated with that branch already.
Commits of the branch's current epoch do advance it, so the events after
them open too.
"""

from __future__ import annotations

from core.intents import EnqueueRecheck
from core.records import Result
from protocols.libraries import mls
from protocols.marmot import facts
from protocols.marmot.errors import InvalidRumor
from protocols.marmot.facts import FailureReason
from protocols.marmot.processing import rules
from protocols.marmot.processing.item import WAITING_FOR_EPOCH, Item, epoch_key
from protocols.marmot.processing.messages import mls_reason
from protocols.marmot.state.store import Branch
from protocols.marmot.wire import rumors


def handle_on_branch(item: Item, branch: Branch, message: bytes) -> Result:
    try:
        header = mls.peek(message)
    except mls.MlsError:
        return item.fail(FailureReason.INVALID_MESSAGE)
    if header.group_id != branch.state.group_id:
        return item.fail(FailureReason.WRONG_GROUP, epoch=header.epoch)
    if header.epoch <= branch.epoch:
        # An epoch both branches share: its keys are the main chain's too, and the main chain let them go.
        return item.fail(FailureReason.EPOCH_EXPIRED, epoch=header.epoch, content_type=header.content_type)
    if header.content_type == "commit":
        return _commit(item, branch, header, message)
    try:
        result = rules.process_message(branch.state, message)
    except (mls.KeyAlreadyUsed, mls.CannotDecryptOwnMessage):
        return _invalidated(item, header.epoch, header.content_type)
    except mls.MlsError as exc:
        return item.fail(mls_reason(exc), epoch=header.epoch, content_type=header.content_type)
    if isinstance(result, mls.ApplicationReceived):
        try:
            rumor = rumors.decode(result.plaintext)
        except InvalidRumor as exc:
            return item.fail(FailureReason.INVALID_RUMOR, str(exc), epoch=result.epoch, content_type="application")
        if rumor["pubkey"] != result.sender_credential:
            return item.fail(FailureReason.SENDER_MISMATCH, epoch=result.epoch, content_type="application")
        return _invalidated(item, result.epoch, "application", rumor=rumor)
    return _invalidated(item, header.epoch, header.content_type)


def _commit(item: Item, branch: Branch, header: mls.MessageHeader, message: bytes) -> Result:
    """A commit on a losing branch: recorded as such; it moves the branch on when it is the branch's next one."""
    intents: list = []
    if header.epoch == branch.state.epoch:
        try:
            result = rules.process_message(branch.state, message)
        except mls.MlsError as exc:
            return item.fail(mls_reason(exc), epoch=header.epoch, content_type="commit")
        if isinstance(result, mls.CommitApplied):
            intents = [
                item.group.branch_written(branch.epoch, branch.digest, result.new_state),
                EnqueueRecheck(WAITING_FOR_EPOCH, epoch_key(item.outer.gid, item.group.state.epoch + 1)),
            ]
    return item.fail(
        FailureReason.INVALIDATED_BRANCH,
        f"commit on the branch that lost epoch {branch.epoch}",
        epoch=header.epoch,
        content_type="commit",
        intents=intents,
    )


def _invalidated(item: Item, epoch: int, content_type: mls.ContentTypeName, rumor: dict | None = None) -> Result:
    return item.fact(
        facts.OUTER_INVALIDATED, intents=item.kept(epoch), epoch=epoch, content_type=content_type, rumor=rumor
    )
