"""Handling what sync reads: group messages in server order, and welcomes.

A group message is one of three things:

* **ours, read back** — its hash is the ``message_hash`` of one of our
  intents: a message intent is COMMITTED (recorded with the text we sent,
  since a sender cannot decrypt its own message), or ERROR when it came so
  many epochs late that no member can read it; a commit intent, unless the
  server marked it superseded, is merged from the pending state we kept and
  COMMITTED, which releases its welcomes;
* **another member's commit** — applied when it won its epoch; then every
  intent of ours built for the old epoch goes back to TO_SEND (a commit
  cannot land any more; a message built but not read back yet is kept as
  built, since it may be on the server already, unless no member could read
  it wherever it lands), and if the commit removed us the group turns
  inactive and every open intent of ours in it ends in ERROR (nothing of
  ours can land after it);
* **another member's application message** — decrypted and recorded, unless
  its sender is no longer a member (it was stored after the commit that
  removed its sender, so no member shows it, and the sender ends its intent
  in ERROR), it is of an epoch before we joined (a welcome's group is read
  from the start of its history: see :mod:`.sync`), or of an epoch no member
  keeps any more (its sender ends its intent in ERROR when it reads it back).

Commits that lost their epoch (``superseded``), commits for epochs we have
passed and proposals (seed 002: members commit only their own) change
nothing.  Each applied message records a fact whose id comes from the
server's message id, so reading it again is recognised as a duplicate.
"""

from __future__ import annotations

import hashlib
import json

from core import contract
from core.records import Envelope, Event, Result, derive_event_id
from protocols.libraries import mls
from protocols.libraries.mls.ahead import Decrypted
from protocols.xmtp import facts, intent_machine, members, queries
from protocols.xmtp.errors import EpochAhead, PayloadUnreadable
from protocols.xmtp.facts import PROTOCOL
from protocols.xmtp.intent_machine import Intent, IntentBook
from protocols.xmtp.kinds import IntentKind, Membership, MessageKind
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.interface import APPLICATION, COMMIT, ServerMessage


def message_id(content: bytes, group_id: bytes, sent_at_ns: int) -> bytes:
    """Seed 002's message id: SHA-256 over the decrypted bytes, the group and the time."""
    return hashlib.sha256(content + group_id + sent_at_ns.to_bytes(8, "big")).digest()


def handle_group_message(ctx: contract.Context, envelope: Envelope) -> Result:
    message: ServerMessage = envelope.payload
    group = queries.group_kept(ctx.db, message.group_id)
    if group is None or group.membership is not Membership.ALLOWED or not group.active:
        return Result()  # not a group we read (declined, left, or unknown): nothing to record
    digest = hashlib.sha256(message.payload).digest()
    ahead = _decrypted_ahead(ctx, message, digest)
    if message.message_type not in (APPLICATION, COMMIT) or (ahead is None and _already_processed(ctx, message)):
        return Result(duplicate=message.message_type in (APPLICATION, COMMIT))
    vault = Vault.in_context(ctx)
    state = vault.group(message.group_id)
    _check_epoch_chain(state, message)
    book = IntentBook(ctx.db)
    # What the helper decrypted is not ours: the engine never decrypts a message of its own member
    # (mls.CannotDecryptOwnMessage), so the book is asked only about what this process reads itself.
    own = None if ahead is not None else book.by_hash(message.group_id, digest)
    if own is not None:
        return _own(book, vault, state, message, own)
    if message.message_type == COMMIT:
        return _foreign_commit(book, vault, state, message)
    return _application(ctx, vault, state, message, ahead)


def _check_epoch_chain(state: mls.GroupState, message: ServerMessage) -> None:
    """:class:`EpochAhead` when ``message`` shows that a commit we have not read took our epoch: it is of a
    later epoch, or a commit the server marked superseded in our epoch (server order puts the winner first)."""
    group = message.group_id.hex()
    if message.epoch > state.epoch and not message.superseded:
        text = (
            f"{_what(message)} {message.id} of group {group} is for epoch {message.epoch}, we hold epoch {state.epoch}"
        )
        raise EpochAhead(f"{text}: a commit before it is missing", message.epoch, state.epoch)
    if message.superseded and message.epoch == state.epoch:
        text = f"commit {message.id} of group {group} lost epoch {state.epoch} to a commit we have not read"
        raise EpochAhead(text, message.epoch + 1, state.epoch)


def _what(message: ServerMessage) -> str:
    return "commit" if message.message_type == COMMIT else "message"


def refusal(message: ServerMessage, exc: mls.MlsError) -> PayloadUnreadable:
    """The refusal of ``message`` the engine refused with ``exc``: :class:`EpochAhead` when the payload says
    it is of a later epoch than ours (its header, which the server read, may be what was damaged)."""
    text = f"{_what(message)} {message.id} of group {message.group_id.hex()}: {exc}"
    if isinstance(exc, mls.WrongEpoch) and exc.message_epoch > exc.state_epoch:
        return EpochAhead(text, exc.message_epoch, exc.state_epoch)
    return PayloadUnreadable(text)


def _decrypted_ahead(ctx: contract.Context, message: ServerMessage, digest: bytes) -> Decrypted | None:
    """What the decrypt-ahead helper made of this very payload (:mod:`.ahead`: the item's prepared result),
    or None.  It decrypted it from our committed state, in which the key of every message we recorded is
    used up: so it is not one we recorded, and the lookup of the facts can be spared."""
    found = ctx.prepared
    if isinstance(found, Decrypted) and found.payload_digest == digest and found.epoch == message.epoch:
        return found
    return None


def _already_processed(ctx: contract.Context, message: ServerMessage) -> bool:
    kinds = (facts.MESSAGE_RECORDED, facts.EPOCH_MOVED)
    return bool(ctx.knows_any(PROTOCOL, *(derive_event_id(k, message.group_id, message.id) for k in kinds)))


def _sent_at_ns(message: ServerMessage) -> int:
    return message.server_timestamp_us * 1000


def _record(message: ServerMessage, kind: MessageKind, content: bytes, sender: str, address: str, *part: str) -> Event:
    sent_at = _sent_at_ns(message)
    data = {
        "id": message_id(content, message.group_id, sent_at).hex(),
        "bytes": facts.b64(content),
        "sent_at_ns": sent_at,
        "kind": int(kind),
        "sender_installation": sender,
        "sender_address": address,
        "server_id": message.id,
    }
    return facts.fact(facts.MESSAGE_RECORDED, message.group_id, _ms(message), data, message.id, *part)


def _ms(message: ServerMessage) -> int:
    return message.server_timestamp_us // 1000


def _application(
    ctx: contract.Context, vault: Vault, state: mls.GroupState, message: ServerMessage, ahead: Decrypted | None
) -> Result:
    if message.epoch < state.epoch and message.epoch < queries.joined_epoch(ctx.db, message.group_id):
        # Sent before we joined: a welcome's group is read from the start of its history, since what the
        # others sent in our first epoch may be stored before our welcome; what is older was never ours to read.
        return Result()
    if _unreadable(state, message):
        # Every member is where we are at this point of server order, so nobody can read it; its sender
        # ends its intent in ERROR when it reads it back (_own).  An older build of one of ours ends here too.
        return Result()
    received: mls.ApplicationReceived | Decrypted
    if ahead is not None:
        received = ahead  # the helper process decrypted it on its copy of this state (.ahead)
    else:
        try:
            processed = mls.process_message(state, message.payload)
        except mls.MlsError as exc:
            raise refusal(message, exc) from exc
        if not isinstance(processed, mls.ApplicationReceived):
            return Result()  # a proposal: seed 002's members commit only their own, so others' are dropped
        received = processed
    sender = received.sender_credential
    known = members.addresses(state)  # every member's installation (kept for the state a page holds)
    if sender not in known:
        # A message of an epoch its sender was removed in, stored after the commit that removed it (server
        # order is everyone's order, so every member drops it alike): the sender, reading that commit
        # before its own message, ends the intent in ERROR (see _foreign_commit), so nobody may show it.
        return Result()
    event = _record(message, MessageKind.APPLICATION, received.plaintext, sender, known[sender])
    if isinstance(received, Decrypted):
        return Result(events=[event])  # the page stages the helper's state once, at its end (.ahead)
    return Result(events=[event], intents=[vault.group_intent(message.group_id, received.new_state)])


def _foreign_commit(book: IntentBook, vault: Vault, state: mls.GroupState, message: ServerMessage) -> Result:
    if message.superseded or message.epoch < state.epoch:
        return Result()  # it lost its epoch, or we are past it: it never takes effect
    try:
        applied = mls.process_message(state, message.payload)
    except mls.MlsError as exc:
        raise refusal(message, exc) from exc
    if not isinstance(applied, mls.CommitApplied):
        raise PayloadUnreadable(f"message {message.id} is stored as a commit but is not one")
    events = _commit_facts(state, message, applied)
    if applied.we_were_removed:
        # Sending them round again would leave them TO_SEND or PUBLISHED for ever: we can neither build in
        # the group any more nor read it (it is not synced once inactive), and a message of ours stored
        # after this commit is dropped by every member (see _application).  Each ends here, with the reason.
        reason = f"we were removed from the group (commit {message.id})"
        change = intent_machine.fail_open(book, message.group_id, reason, _ms(message), message.id)
        events += [*change.events, facts.fact(facts.GROUP_DEACTIVATED, message.group_id, _ms(message), {}, message.id)]
    else:
        reason = "another member's commit took the epoch"
        kept = applied.new_state.config.max_past_epochs
        change = intent_machine.requeue_stale(
            book, message.group_id, applied.new_epoch, kept, reason, message.id, _ms(message)
        )
        events += change.events
    return Result(events=events, intents=[*change.writes, vault.group_intent(message.group_id, applied.new_state)])


def _commit_facts(before: mls.GroupState, message: ServerMessage, applied: mls.CommitApplied) -> list[Event]:
    """The epoch it moved to, and a message for each member it added or removed."""
    group = message.group_id
    committer = applied.committer_credential
    by = members.address_of(before, committer) if committer in mls.member_credentials(before).values() else ""
    events = [facts.fact(facts.EPOCH_MOVED, group, _ms(message), {"epoch": applied.new_epoch}, message.id)]
    after = members.addresses(applied.new_state)
    changes = (
        (MessageKind.MEMBER_ADDED, "added", applied.added, after),
        (MessageKind.MEMBER_REMOVED, "removed", applied.removed, members.addresses(before)),
    )
    for kind, word, who, known in changes:
        if who:
            content = json.dumps(
                {word: sorted({known.get(i, members.UNVERIFIED) for i in who}), "installations": sorted(who), "by": by},
                sort_keys=True,
            ).encode()
            events.append(_record(message, kind, content, committer, by or members.UNVERIFIED, word))
    return events


def _unreadable(state: mls.GroupState, message: ServerMessage) -> bool:
    """Whether ``message`` is of an epoch members no longer keep, here in server order."""
    return state.epoch - message.epoch > state.config.max_past_epochs


def _own(book: IntentBook, vault: Vault, state: mls.GroupState, message: ServerMessage, own: Intent) -> Result:
    group = message.group_id
    committed = intent_machine.commit(book, own, _ms(message))
    if own.kind is IntentKind.SEND_MESSAGE:
        if _unreadable(state, message):
            # It reached the server too many epochs after it was built (it waited through an outage, or we
            # had not read the group for long): no member can read it (see _application).  Not COMMITTED,
            # and not sent round again either (a published intent goes back only for a commit's lost race).
            reason = f"it reached the server {state.epoch - message.epoch} epochs late; no member can read it"
            failed = intent_machine.fail(book, own, reason, _ms(message), own.id, message.id)
            return Result(events=failed.events, intents=failed.writes)
        text = json.loads(own.request)["text"].encode()
        me = mls.own_credential(state)
        recorded = _record(message, MessageKind.APPLICATION, text, me, members.address_of(state, me))
        return Result(events=[recorded, *committed.events], intents=committed.writes)
    if message.superseded:
        # Our commit lost: the winner came first (server order) and sent the intent round again already;
        # if it has not, do it now, so the intent is never left waiting for a commit that cannot land.
        requeued = intent_machine.requeue(own, "our commit lost its epoch", message.id, _ms(message))
        return Result(events=requeued.events, intents=requeued.writes)
    try:
        applied = mls.process_message(state, message.payload)
    except mls.MlsError as exc:
        raise PayloadUnreadable(f"our own commit {message.id} does not apply: {exc}") from exc
    assert isinstance(applied, mls.CommitApplied)
    events = [*_commit_facts(state, message, applied), *committed.events]
    return Result(events=events, intents=[*committed.writes, vault.group_intent(group, applied.new_state)])


def handle_welcome(ctx: contract.Context, envelope: Envelope) -> Result:
    """A welcome to us: join the group as PENDING with the KeyPackage it names (used up, unless last-resort)."""
    message: ServerMessage = envelope.payload
    if queries.group(ctx.db, message.group_id) is not None:
        return Result(duplicate=True)
    vault = Vault.in_context(ctx)
    identity = vault.identity()
    try:
        refs = set(mls.welcome_refs(message.payload))
    except mls.MlsError as exc:
        raise PayloadUnreadable(f"welcome {message.id}: {exc}") from exc
    stock = vault.key_packages()
    ref = next((r for r in stock if r in refs), None)
    if ref is None:
        raise PayloadUnreadable(f"welcome {message.id} names none of our KeyPackages (it may have been used already)")
    try:
        state = mls.join_from_welcome(identity.mls_identity(), stock[ref], message.payload)
    except mls.MlsError as exc:
        raise PayloadUnreadable(f"welcome {message.id} does not open: {exc}") from exc
    if state.group_id != message.group_id:
        raise PayloadUnreadable(f"welcome {message.id} is stored under another group than the one it opens")
    data = {
        "created_at_ns": _sent_at_ns(message),
        "membership": int(Membership.PENDING),
        "epoch": state.epoch,
        "added_by": members.address_of(state, message.sender),
        "welcome_cursor": message.cursor,
    }
    event = facts.fact(facts.WELCOME_RECEIVED, message.group_id, _ms(message), data, message.id)
    return Result(
        events=[event], intents=[vault.group_intent(message.group_id, state), vault.key_package_intent(None, ref)]
    )
