"""Application messages and proposals (every content type but commits).

Outcomes:

- a rumor whose pubkey is the MLS sender's credential: Processed, stored in
  the history (unless it is a deletion, which only changes its target);
- our own message without a local record (another device of ours, a
  restored database): Processed, nothing to show — we cannot decrypt it;
- add/remove proposals: Processed, kept pending for an admin's commit; a
  self-remove is committed at once when we are an admin; other kinds are
  ignored with a warning;
- anything the MLS layer refuses: Failed with a reason from the vocabulary.
"""

from __future__ import annotations

import logging

from core.records import Blocked, Result
from protocols.libraries import mls
from protocols.marmot import facts
from protocols.marmot.errors import InvalidRumor
from protocols.marmot.facts import FailureReason
from protocols.marmot.processing import rules
from protocols.marmot.processing.item import Item, wait_for_epoch
from protocols.marmot.state import deletions, seen
from protocols.marmot.transport import nostr_transport
from protocols.marmot.wire import group_data, outer, rumors

log = logging.getLogger("tessera.marmot")


def handle_message(item: Item, header: mls.MessageHeader, message: bytes) -> Result | Blocked:
    """Decrypt an application message or proposal with the current state and record the outcome."""
    try:
        result = rules.process_message(item.group.state, message)
    except mls.CannotDecryptOwnMessage:
        return item.fact(
            facts.OUTER_PROCESSED,
            epoch=header.epoch,
            content_type=header.content_type,
            note="our own message, sent from elsewhere; not readable here",
        )
    except mls.WrongEpoch as exc:
        if exc.message_epoch > exc.state_epoch:
            return wait_for_epoch(item, exc.state_epoch + 1, f"it is for epoch {exc.message_epoch}")
        return item.fail(FailureReason.EPOCH_EXPIRED, epoch=header.epoch, content_type=header.content_type)
    except mls.MlsError as exc:
        return item.fail(mls_reason(exc), epoch=header.epoch, content_type=header.content_type)
    if isinstance(result, mls.ApplicationReceived):
        return application(item, result)
    if isinstance(result, mls.ProposalReceived):
        return proposal(item, result)
    return item.fail(FailureReason.INVALID_MESSAGE, epoch=header.epoch, content_type=header.content_type)


def mls_reason(exc: Exception) -> FailureReason:
    """The vocabulary word for an engine refusal (the exception text is never stored)."""
    for kind, reason in _MLS_REASONS:
        if isinstance(exc, kind):
            return reason
    return FailureReason.INVALID_MESSAGE


_MLS_REASONS = (
    (mls.KeyAlreadyUsed, FailureReason.REPLAYED),
    (mls.NotAMember, FailureReason.NOT_A_MEMBER),
    (mls.DecryptionFailed, FailureReason.UNDECRYPTABLE),
    (mls.InvalidSignature, FailureReason.BAD_SIGNATURE),
    (rules.NoAdminLeft, FailureReason.NO_ADMIN_LEFT),
    (rules.IdentityChanged, FailureReason.IDENTITY_CHANGED),
    (mls.UnauthorizedCommit, FailureReason.UNAUTHORIZED_COMMIT),
    (mls.ConfirmationMismatch, FailureReason.CONFIRMATION_MISMATCH),
    (mls.WrongEpoch, FailureReason.EPOCH_EXPIRED),
)


def application(item: Item, received: mls.ApplicationReceived) -> Result:
    # The key is consumed either way; keep the new state even when the rumor is refused.
    keep = (*item.state_intents(received.new_state), *item.kept(received.epoch))
    try:
        rumor = rumors.decode(received.plaintext)
    except InvalidRumor as exc:
        return item.fail(
            FailureReason.INVALID_RUMOR, str(exc), epoch=received.epoch, content_type="application", intents=keep
        )
    if rumor["pubkey"] != received.sender_credential:
        return item.fail(FailureReason.SENDER_MISMATCH, epoch=received.epoch, content_type="application", intents=keep)
    if rumor["kind"] == rumors.DELETION_KIND:
        return deletion(item, rumor, received.epoch, keep)
    return item.fact(
        facts.RUMOR_RECEIVED,
        intents=keep,
        epoch=received.epoch,
        sender=received.sender_credential,
        rumor=rumor,
        deleted_epoch=_deleted_in_advance(item, rumor),
    )


def _deleted_in_advance(item: Item, rumor: dict) -> int | None:
    """The epoch of its author's deletion when that arrived before the rumor itself."""
    return deletions.earliest(item.group.values, item.outer.gid, rumor["id"], rumor["pubkey"])


def deletion(item: Item, rumor: dict, epoch: int, keep: tuple) -> Result:
    """A kind-5 rumor: deletes each named rumor its author sent; ignored for anyone else's."""
    targets = []
    for target in rumors.deletion_targets(rumor):
        known = seen.author(item.ctx.state, item.outer.gid, target)
        if known is None:
            effect = facts.DeletionEffect.PENDING  # applied if the target arrives later from the same author
        else:
            effect = facts.DeletionEffect.DELETED if known == rumor["pubkey"] else facts.DeletionEffect.IGNORED
        targets.append({"id": target, "effect": effect})
    recorded = deletions.recorded(
        item.group.values, item.outer.gid, rumor["pubkey"], rumor["id"], epoch, [t["id"] for t in targets]
    )
    return item.fact(
        facts.DELETION_RECEIVED,
        intents=(*keep, *recorded),
        epoch=epoch,
        rumor_id=rumor["id"],
        pubkey=rumor["pubkey"],
        targets=targets,
    )


def proposal(item: Item, received: mls.ProposalReceived) -> Result:
    state = received.new_state
    if received.kind == "other":
        log.warning(
            "marmot group %s: ignoring a %s proposal from %s",
            item.outer.gid[:12],
            received.kind,
            received.proposer_credential[:12],
        )
        return _proposal_fact(item, received, facts.ProposalAction.IGNORED, tuple(item.state_intents(state)))
    if received.kind == "self_remove" and mls.own_credential(state) in group_data.admins(state):
        return _auto_commit(item, received)
    return _proposal_fact(item, received, facts.ProposalAction.PENDING, tuple(item.state_intents(state)))


def _proposal_fact(item: Item, received: mls.ProposalReceived, action: facts.ProposalAction, intents: tuple) -> Result:
    return item.fact(
        facts.PROPOSAL_RECEIVED,
        intents=(*intents, *item.kept(received.epoch)),
        epoch=received.epoch,
        kind=received.kind,
        proposer=received.proposer_credential,
        subject=received.subject_credential,
        ref=received.proposal_ref.hex(),
        action=action,
    )


def _auto_commit(item: Item, received: mls.ProposalReceived) -> Result:
    """As an admin, commit a member's self-removal and publish it; adopt it when it comes back."""
    committed = mls.commit(received.new_state, proposals_by_ref=[received.proposal_ref])
    event = outer.seal(received.new_state, committed.message, item.outer.route, item.ctx.now_ms // 1000)
    publish = nostr_transport.group_event_intent(received.new_state, event)  # the group's relays (loopback without any)
    # The pending state knows the commit; processing the echo with it applies it.
    return _proposal_fact(
        item, received, facts.ProposalAction.AUTO_COMMITTED, (*item.state_intents(committed.pending_state), publish)
    )
