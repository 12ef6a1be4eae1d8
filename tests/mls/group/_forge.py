"""Messages no honest member would send, for the receiver-side refusal tests.

:func:`commit` refuses a bad proposal list before it signs anything, so the
receivers' checks need commits made another way: :func:`forged_commit`
frames, signs and protects a Commit exactly as a member would, with
whatever proposal list the test wants and none of the committer's checks;
:func:`forged_external_commit` re-signs a valid external commit with another
proposal list.  Everything a receiver checks before the proposal list (the
framing, membership tag, signature, epoch) is genuine, so a refusal names
the list rule it broke.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.crypto import Rng, suite
from protocols.libraries.mls.group.sending import handshake_wire_format, protect, sign
from protocols.libraries.mls.group.state import GroupState
from protocols.libraries.mls.protection import public_message, sign_content, with_confirmation_tag
from protocols.libraries.mls.schedule import confirmation_tag, confirmed_transcript_hash, next_epoch, zero_secret
from protocols.libraries.mls.tree.treekem import create_update_path


def forged_commit(
    state: GroupState,
    entries: Sequence[m.ProposalOrRef],
    *,
    path: bool = True,
    tag: bytes | None = None,
    rng: Rng | None = None,
) -> bytes:
    """A Commit of ``entries`` from ``state``'s member, sent as its configuration says, with no list check.

    With ``path`` it carries a genuine UpdatePath over the current tree.  The
    confirmation tag is ``tag``, or else the one an honest committer would
    compute if ``entries`` changed neither the tree nor the context nor the
    PSKs: exact for an empty list, so such a forgery is a valid commit.
    """
    cs = state.suite
    provisional = attrs.evolve(state.context, epoch=state.epoch + 1, tree_hash=state.tree.tree_hash())
    created = None
    if path:
        created = create_update_path(state.tree, state.private, state.signature_private, provisional, rng=rng)
        provisional = created.group_context
    content = m.Commit(tuple(entries), None if created is None else created.update_path)
    authenticated = sign(state, handshake_wire_format(state), content)
    if tag is None:
        confirmed = confirmed_transcript_hash(cs, state.interim_transcript_hash, authenticated)
        commit_secret = zero_secret(cs) if created is None else created.commit_secret
        context = attrs.evolve(provisional, confirmed_transcript_hash=confirmed)
        secrets = next_epoch(cs, state.keys.init_secret, commit_secret, zero_secret(cs), context).secrets
        tag = confirmation_tag(cs, secrets.confirmation_key, confirmed)
    message, _ = protect(state, with_confirmation_tag(authenticated, tag), rng)
    return message


def forged_proposal(state: GroupState, proposal: m.Proposal, rng: Rng | None = None) -> bytes:
    """``proposal`` sent by ``state``'s member without the sender-side check."""
    message, _ = protect(state, sign(state, handshake_wire_format(state), proposal), rng)
    return message


def forged_external_commit(
    message: bytes, signature_private: bytes, group_context: m.GroupContext, entries: Sequence[m.ProposalOrRef]
) -> bytes:
    """A valid external commit (an encoded MLSMessage) with its proposals replaced by ``entries``, re-signed.

    ``group_context`` is the group's context in the commit's epoch (what the
    joiner's signature covers); the path and confirmation tag stay.
    """
    public = decode(m.MLSMessage, message).message
    assert isinstance(public, m.PublicMessage) and isinstance(public.content.content, m.Commit)
    framed = attrs.evolve(public.content, content=attrs.evolve(public.content.content, proposals=tuple(entries)))
    cs = suite(group_context.cipher_suite)
    authenticated = sign_content(cs, signature_private, m.WireFormat.MLS_PUBLIC_MESSAGE, framed, group_context)
    tag = public.auth.confirmation_tag
    assert tag is not None
    resigned = public_message(cs, with_confirmation_tag(authenticated, tag), None)
    return encode(m.MLSMessage(m.ProtocolVersion.MLS10, resigned))
