"""Sending and receiving protected group messages with the state's ratchets.

:func:`send` signs content, takes the next key of our own ratchet and seals
the message; :func:`receive` does the reverse for another member's message:
sender data, ratchet key (deleted from the returned state), content, and the
signature against the sender's leaf in that message's epoch.  Both are pure:
they return new states and never touch their inputs.
"""

from __future__ import annotations

import attrs

from . import framing, suite
from . import roster as rosters
from .errors import CannotDecryptOwnMessage, InvalidMessage, InvalidSignature, WrongEpoch
from .framing import Content, Envelope, SenderData
from .labels import ref_hash, sign_with_label, verify_with_label
from .secret_tree import APPLICATION, HANDSHAKE, SecretTree, next_send_key, receive_key
from .state import GroupState, Signer

SIGN_LABEL = "FramedContentTBS"
PROPOSAL_REF_LABEL = "MLS 1.0 Proposal Reference"


def ratchet_kind(content_type: int) -> int:
    """Application messages use the application ratchet; proposals and commits the handshake one."""
    return APPLICATION if content_type == framing.APPLICATION else HANDSHAKE


def sign_content(state: GroupState, content_type: int, body: bytes) -> tuple[bytes, bytes]:
    """``(FramedContent, signature)`` of our content in the current epoch."""
    framed = framing.framed_content(state.group_id, state.epoch, state.own_leaf, content_type, body)
    tbs = framing.content_tbs(framed, state.group_context)
    return framed, sign_with_label(state.own_signing_private, SIGN_LABEL, tbs)


def seal_with_next_key(
    state: GroupState, content_type: int, content: Content, rng: suite.Rng | None
) -> tuple[bytes, GroupState, int]:
    """Seal ``content`` with our next ratchet key: ``(message, new_state, generation)``."""
    kind = ratchet_kind(content_type)
    tree, generation, key, nonce = next_send_key(state.tree, state.own_leaf, kind)
    sender = SenderData(state.own_leaf, generation, suite.random_bytes(rng, 4))
    message = framing.seal(
        group_id=state.group_id,
        epoch=state.epoch,
        content_type=content_type,
        sender=sender,
        key=key,
        nonce=nonce,
        sender_data_secret=state.sender_data_secret,
        content=content,
    )
    return message, attrs.evolve(state, tree=tree), generation


def send(state: GroupState, content_type: int, body: bytes, rng: suite.Rng | None):
    """Sign and seal a non-commit message: ``(message, new_state, framed, signature)``."""
    framed, signature = sign_content(state, content_type, body)
    message, new_state, _ = seal_with_next_key(state, content_type, Content(body, signature, None), rng)
    return message, new_state, framed, signature


def proposal_ref(framed: bytes, signature: bytes) -> bytes:
    """ProposalRef: RefHash over the AuthenticatedContent (wire_format, content, signature)."""
    return ref_hash(PROPOSAL_REF_LABEL, framing.confirmed_transcript_input(framed, signature))


# --- receiving ----------------------------------------------------------------


@attrs.frozen
class Received:
    """A decrypted, signature-checked message."""

    epoch: int
    content_type: int
    sender: SenderData
    signer: Signer
    content: Content
    framed: bytes


@attrs.frozen
class _EpochKeys:
    group_context: bytes
    sender_data_secret: bytes
    tree: SecretTree
    past_index: int | None  # None: the current epoch


def _epoch_keys(state: GroupState, epoch: int) -> _EpochKeys:
    if epoch == state.epoch:
        return _EpochKeys(state.group_context, state.sender_data_secret, state.tree, None)
    for i, past in enumerate(state.past_epochs):
        if past.epoch == epoch:
            return _EpochKeys(past.group_context, past.sender_data_secret, past.tree, i)
    raise WrongEpoch(epoch, state.epoch, "epoch is outside the retained window")


def _signer(state: GroupState, keys: _EpochKeys, leaf: int) -> Signer:
    if keys.past_index is None:
        node = rosters.member_at(state.roster, leaf)
        signer = None if node is None else Signer(node.credential, node.signature_key)
    else:
        signers = state.past_epochs[keys.past_index].signers
        signer = signers[leaf] if leaf < len(signers) else None
    if signer is None:
        raise InvalidMessage(f"sender leaf {leaf} is not a member in that epoch")
    return signer


def _with_tree(state: GroupState, keys: _EpochKeys, tree: SecretTree) -> GroupState:
    if keys.past_index is None:
        return attrs.evolve(state, tree=tree)
    past = list(state.past_epochs)
    past[keys.past_index] = attrs.evolve(past[keys.past_index], tree=tree)
    return attrs.evolve(state, past_epochs=tuple(past))


def receive(state: GroupState, env: Envelope) -> tuple[Received, GroupState]:
    """Decrypt and verify another member's message; the returned state has used up its key."""
    keys = _epoch_keys(state, env.epoch)
    sender = framing.open_sender_data(env, keys.sender_data_secret)
    if sender.leaf == state.own_leaf:
        raise CannotDecryptOwnMessage("this message was sent by us; its key was deleted after sending")
    signer = _signer(state, keys, sender.leaf)
    tree, key, nonce = receive_key(keys.tree, sender.leaf, ratchet_kind(env.content_type), sender.generation)
    content = framing.open_content(env, key, nonce, sender.reuse_guard)
    framed = framing.framed_content(env.group_id, env.epoch, sender.leaf, env.content_type, content.body)
    tbs = framing.content_tbs(framed, keys.group_context)
    if not verify_with_label(signer.signature_key, SIGN_LABEL, tbs, content.signature):
        raise InvalidSignature(f"message signature of leaf {sender.leaf} does not verify")
    received = Received(env.epoch, env.content_type, sender, signer, content, framed)
    return received, _with_tree(state, keys, tree)
