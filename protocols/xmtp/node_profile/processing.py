"""Handling what the node profile's sync reads, inside the item's transaction: welcomes and group messages.

Both go through :mod:`protocols.libraries.xmtp_mls`'s own functions, the ones
its sync uses (``join_welcome``, ``JoinedGroup.read``), with the identity updates
this database keeps (:class:`~.identity_updates.StoredUpdates`) instead of the
node, so nothing here touches the network.  When those updates are behind what
a welcome or a commit records,
:class:`~protocols.libraries.xmtp_mls.IdentityUpdatesBehind` leaves the handler
with nothing changed; the sync fetches the updates and hands the item in again.

* **A welcome** for our installation: unwrapped with the KeyPackage it was sealed
  to, checked (RFC 9420, libxmtp's group context, every member against its
  inbox's identity updates), and kept PENDING until ``accept``; the KeyPackage's
  private keys are deleted in the same transaction (forward secrecy: the
  key-package job uploads a fresh one).
* **A group message** of a group we accepted (its plaintext already worked out by the sync's decrypt-ahead
  helper when the item carries it: :mod:`.ahead`): ours read back confirms its intent
  (COMMITTED) and is recorded with what we sent; a commit of ours read back is
  applied by ``JoinedGroup.read`` (the pending commit the build kept) and
  COMMITTED, or, when another commit took its epoch, sent back to TO_SEND; read
  after the winner (its intent went back already and keeps the hashes of its
  lost builds), it is passed by.  Another member's text, reaction, reply or
  content of a type nobody here decodes is recorded with its type and sender
  inbox; a commit is checked as libxmtp checks it and applied (our intents
  built for the epoch it took go back to TO_SEND), or recorded as rejected with
  the group left before it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from core import contract
from core.records import Envelope, Event, Result
from protocols.libraries.mls.ahead import Decrypted
from protocols.libraries.mls.errors import MlsError
from protocols.libraries.xmtp_content import codecs
from protocols.libraries.xmtp_mls import (
    AppliedCommit,
    IdentityUpdatesBehind,
    JoinedGroup,
    PendingProposal,
    ReceivedMessage,
    RejectedCommit,
    SupersededCommit,
    UnreadableMessage,
    XmtpMlsError,
    join_welcome,
)
from protocols.xmtp import facts, intent_machine, queries
from protocols.xmtp.errors import PayloadUnreadable
from protocols.xmtp.intent_machine import IntentBook
from protocols.xmtp.kinds import Membership, MessageKind
from protocols.xmtp.node_profile import committing, leaving, sending
from protocols.xmtp.node_profile.identity_updates import StoredUpdates
from protocols.xmtp.node_profile.inbox import Inbox
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.node_records import NodeGroupMessage, NodeWelcome

#: Where the epoch a welcome brought us in at is kept, per group (messages before it are not ours to read).
JOINED = "joined/"


def joined_group(vault: Vault, group_id: bytes) -> JoinedGroup:
    """Our libxmtp group, as :mod:`protocols.libraries.xmtp_mls` works on it, from the sealed state."""
    state = vault.group(group_id)
    kept = vault.get(JOINED + group_id.hex())
    joined_epoch = int(json.loads(kept)["epoch"]) if kept else 0
    return JoinedGroup(state, joined_epoch=joined_epoch)


def server_id(node_id: int) -> str:
    """The node's id as the read model orders it (text: zero-padded so text order is number order)."""
    return f"{node_id:020d}"


# --- welcomes ------------------------------------------------------------------------------------


def handle_welcome(ctx: contract.Context, envelope: Envelope) -> Result:
    welcome: NodeWelcome = envelope.payload
    vault = Vault.in_context(ctx)
    inbox = vault.inbox()
    held = vault.key_packages()
    try:
        joined = join_welcome(
            inbox.installation_seed,
            inbox.inbox_id,
            list(held.values()),
            welcome.to_proto(inbox.installation_key),
            StoredUpdates(ctx.db),
        )
    except IdentityUpdatesBehind:
        raise  # the sync fetches the inboxes' updates and hands the welcome in again
    except (XmtpMlsError, MlsError) as refused:
        raise PayloadUnreadable(f"welcome {welcome.id} refused: {refused}") from None
    used = [ref for ref, kept in held.items() if bytes(kept.key_package.init_key) == welcome.hpke_public_key]
    if vault.has_group(joined.group_id):
        return _welcomed_again(ctx, vault, joined, welcome, used)
    context = joined.context
    data = {
        "created_at_ns": welcome.created_ns,
        "membership": int(Membership.PENDING),
        "epoch": joined.epoch,
        "name": context.mutable.name or "",
        "added_by": context.metadata.creator_inbox_id,
    }
    event = facts.fact(facts.WELCOME_RECEIVED, joined.group_id, ctx.now_ms, data, welcome.id)
    writes = [
        vault.group_intent(joined.group_id, joined.state),
        vault.intent(JOINED + joined.group_id.hex(), json.dumps({"epoch": joined.joined_epoch}).encode()),
        *(vault.key_package_intent(None, ref) for ref in used),
    ]
    return Result(events=[event], intents=writes)


def _welcomed_again(
    ctx: contract.Context, vault: Vault, joined: JoinedGroup, welcome: NodeWelcome, used: list[bytes]
) -> Result:
    """A welcome to a group we have, by libxmtp's rule: while we are in it at the welcome's epoch or later it
    was processed already (nothing changes); once we were removed (or it brings an epoch past ours) we were
    added again, so its state replaces ours and the group is read again from the epoch it brings.  The
    decision on the group (accepted, pending, declined) stays, as libxmtp keeps it."""
    group_id = joined.group_id
    listed = queries.group(ctx.db, group_id)
    if listed is not None and listed.active and joined.epoch <= joined_group(vault, group_id).epoch:
        return Result(duplicate=True)
    context = joined.context
    data = {
        "epoch": joined.epoch,
        "name": context.mutable.name or "",
        "description": context.mutable.description or "",
        "members": joined.member_inbox_ids(),
        "welcome": welcome.id,
    }
    event = facts.fact(facts.GROUP_READDED, group_id, ctx.now_ms, data, welcome.id)
    writes = [
        vault.group_intent(group_id, joined.state),
        vault.intent(JOINED + group_id.hex(), json.dumps({"epoch": joined.joined_epoch}).encode()),
        *(vault.key_package_intent(None, ref) for ref in used),
        *leaving.forget(vault, group_id),
    ]
    return Result(events=[event], intents=writes)


# --- group messages ------------------------------------------------------------------------------


def handle_group_message(ctx: contract.Context, envelope: Envelope) -> Result:
    message: NodeGroupMessage = envelope.payload
    group = queries.group(ctx.db, message.group_id)
    if group is None or group.membership is not Membership.ALLOWED or not group.active:
        return Result()  # not a group we read (declined, left, or unknown): nothing to record
    vault = Vault.in_context(ctx)
    book = IntentBook(ctx.db)
    digest = hashlib.sha256(message.data).digest()
    own = book.by_hash(message.group_id, digest)
    if own is None and book.lost_to(message.group_id, digest) is not None:
        # Our commit that lost its epoch, stored after the winner that sent its intent back to TO_SEND
        # (rebuilt already, or to be): nothing in it is news, and no member can read it any more.
        return Result()
    if own is not None and own.kind.is_commit:
        return _own_commit(ctx, vault, book, own, message)
    if own is not None:
        return _read_back(ctx, vault.inbox(), book, own, message)
    joined = joined_group(vault, message.group_id)
    before = joined.state
    # With the helper's plaintext (its item's prepared result: .ahead) the state is left as it is; the sync
    # adopts the helper's state once the page is recorded.  IdentityUpdatesBehind: the sync refreshes.
    decrypted = ctx.prepared if isinstance(ctx.prepared, Decrypted) else None
    read = joined.read(message.to_proto(), StoredUpdates(ctx.db), decrypted)
    events = _events(ctx, joined, message, read)
    writes: list[Any] = [] if joined.state is before else [vault.group_intent(message.group_id, joined.state)]
    writes += leaving.after_read(vault, joined, read)  # a member asked to leave, or a commit removed some who had
    if any(event.type == facts.GROUP_DEACTIVATED for event in events):
        # Nothing of ours can land in a group that removed us: every open intent in it ends in ERROR.
        by = getattr(read, "committer_inbox_id", "")
        why = leaving.removal_reason(vault, message.group_id, by)
        reason = f"we were removed from group {message.group_id.hex()}: {why}"
        ended = intent_machine.fail_open(book, message.group_id, reason, ctx.now_ms, str(message.id))
        events += ended.events
        writes += ended.writes
    elif isinstance(read, AppliedCommit):
        # Another member's commit took the epoch: a commit of ours built for it can no longer land (seed 002).
        kept = joined.state.config.max_past_epochs
        reason = f"another member's commit took epoch {read.new_epoch - 1}"
        stale = intent_machine.requeue_stale(
            book, message.group_id, read.new_epoch, kept, reason, str(message.id), ctx.now_ms
        )
        events += stale.events
        writes += stale.writes
    return Result(events=events, intents=writes)


def _own_commit(
    ctx: contract.Context, vault: Vault, book: IntentBook, own: intent_machine.Intent, message: NodeGroupMessage
) -> Result:
    """Our commit, read back through ``JoinedGroup.read`` like any message: the node ordered it first in its
    epoch, so the commit the state kept pending applies and the intent is COMMITTED; if it did not apply
    (another commit took the epoch), the intent goes back to TO_SEND to be built for the new epoch."""
    joined = joined_group(vault, message.group_id)
    epoch = joined.epoch
    joined.sent.add(hashlib.sha256(message.data).digest())  # how read() tells a message of ours
    joined.read(message.to_proto(), StoredUpdates(ctx.db))
    if joined.epoch == epoch:
        lost = intent_machine.requeue(own, "another member's commit took the epoch", str(message.id), ctx.now_ms)
        return Result(events=lost.events, intents=lost.writes)
    committed = intent_machine.commit(book, own, ctx.now_ms)
    events = [*committed.events, *_epoch_events(ctx, joined, message, joined.epoch)]
    landed = committing.committed_at(hashlib.sha256(message.data).digest(), message.id)  # for its welcomes
    writes: list[Any] = [*committed.writes, landed, vault.group_intent(message.group_id, joined.state)]
    return Result(events=events, intents=[*writes, *leaving.after_commit(vault, joined)])


def _read_back(
    ctx: contract.Context, inbox: Inbox, book: IntentBook, own: intent_machine.Intent, message: NodeGroupMessage
) -> Result:
    """Our own message, read back: its intent is COMMITTED and it is recorded as what we sent."""
    change = intent_machine.commit(book, own, ctx.now_ms)
    sent = sending.sent_message(own)
    recorded = _recorded(
        ctx,
        message,
        message_id=sent.message_id,
        encoded=sent.encoded,
        content_type=sent.content_type,
        sender_inbox=inbox.inbox_id,
        sender_installation=inbox.installation_key,
    )
    return Result(events=[*change.events, recorded], intents=change.writes)


def _events(ctx: contract.Context, joined: JoinedGroup, message: NodeGroupMessage, read: object) -> list[Event]:
    group_id = message.group_id
    if read is None:
        return []  # of an epoch before the one we joined at: the welcome gave no keys for it
    if isinstance(read, ReceivedMessage):
        encoded = codecs.encode_bytes(read.content)
        kind = str(read.content_type) if read.content_type is not None else ""
        return [
            _recorded(
                ctx,
                message,
                message_id=read.message_id,
                encoded=encoded,
                content_type=kind,
                sender_inbox=read.sender_inbox_id,
                sender_installation=read.sender_installation,
            )
        ]
    if isinstance(read, AppliedCommit):
        return _commit_events(ctx, joined, message, read)
    if isinstance(read, RejectedCommit):
        data = {"node_id": message.id, "committer": read.committer_inbox_id, "reason": read.reason}
        return [facts.fact(facts.COMMIT_REJECTED, group_id, ctx.now_ms, data, message.id)]
    if isinstance(read, SupersededCommit):
        return []  # another member's commit that lost its epoch at the node: nobody applies it
    if isinstance(read, UnreadableMessage):
        data = {"node_id": message.id, "reason": read.reason}
        return [facts.fact(facts.MESSAGE_UNREADABLE, group_id, ctx.now_ms, data, message.id)]
    assert isinstance(read, PendingProposal)
    return []


def _commit_events(
    ctx: contract.Context, joined: JoinedGroup, message: NodeGroupMessage, applied: AppliedCommit
) -> list[Event]:
    if applied.we_were_removed:
        by = applied.committer_inbox_id
        data = {"by": by, "reason": leaving.removal_reason(Vault.in_context(ctx), message.group_id, by)}
        return [facts.fact(facts.GROUP_DEACTIVATED, message.group_id, ctx.now_ms, data)]
    return _epoch_events(ctx, joined, message, applied.new_epoch)


def _epoch_events(ctx: contract.Context, joined: JoinedGroup, message: NodeGroupMessage, epoch: int) -> list[Event]:
    """A commit's facts: the epoch it began, and the group's name, description and members after it."""
    group_id = message.group_id
    events = [facts.fact(facts.EPOCH_MOVED, group_id, ctx.now_ms, {"epoch": epoch}, message.id)]
    context = joined.context
    metadata = {
        "name": context.mutable.name or "",
        "description": context.mutable.description or "",
        "members": joined.member_inbox_ids(),
    }
    events.append(facts.fact(facts.GROUP_METADATA_CHANGED, group_id, ctx.now_ms, metadata, message.id))
    return events


def _recorded(
    ctx: contract.Context,
    message: NodeGroupMessage,
    *,
    message_id: bytes,
    encoded: bytes,
    content_type: str,
    sender_inbox: str,
    sender_installation: bytes,
) -> Event:
    data = {
        "id": message_id.hex(),
        "bytes": facts.b64(encoded),
        "sent_at_ns": message.created_ns,
        "kind": int(MessageKind.APPLICATION),
        "sender_installation": sender_installation.hex(),
        "sender_address": "",
        "server_id": server_id(message.id),
        "content_type": content_type,
        "sender_inbox": sender_inbox,
    }
    return facts.fact(facts.MESSAGE_RECORDED, message.group_id, ctx.now_ms, data, message.id)
