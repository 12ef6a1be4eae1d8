"""Joining by external commit from a GroupInfo (RFC 9420 sections 8.3, 12.4.3.2).

An outsider that holds a GroupInfo with the ``external_pub`` extension
derives the new epoch's ``init_secret`` by HPKE-exporting it to that key,
sends an ExternalInit carrying the KEM output, adds itself in the leftmost
free leaf and refreshes its whole path.  A member that lost its state can
rejoin this way and remove its old leaf in the same commit (a resync).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from ..codec import decode, encode
from ..crypto import KeyPair, Rng, suite
from ..errors import InvalidMessage
from ..messages import (
    Capabilities,
    Commit,
    Credential,
    Extension,
    ExternalInit,
    FramedContent,
    GroupContext,
    GroupInfo,
    LeafNode,
    MLSMessage,
    PreSharedKey,
    PreSharedKeyID,
    Proposal,
    ProposalByValue,
    ProtocolVersion,
    RatchetTree,
    Remove,
    SenderNewMemberCommit,
    WireFormat,
)
from ..protection import public_message, sign_content, with_confirmation_tag
from ..schedule import confirmation_tag, confirmed_transcript_hash, interim_transcript_hash, next_epoch
from ..tree.private_tree import TreePrivate
from ..tree.ratchet_tree import RatchetTree as Tree
from ..tree.treekem import create_update_path
from ..tree.validation import check_required_capabilities, validate_leaf_in_tree
from . import extensions as ext
from .create import own_leaf_node
from .epoch import EpochStart, first_state, psk_secret_for
from .group_info import external_pub
from .join import checked_tree, received_tree
from .proposal_list import Sourced, check_list
from .refusals import InvalidCommit, UnsupportedExtension
from .state import GroupConfig, GroupState

#: The HPKE exporter context of an external joiner's init secret (RFC 9420 section 8.3).
EXTERNAL_INIT_LABEL = b"MLS 1.0 external init secret"


@attrs.frozen
class ExternalJoin:
    """An external commit and the joiner's state once the group accepts it.

    Attributes:
        message: the commit, an encoded MLSMessage (always a PublicMessage).
        new_state: the joiner's state in the epoch the commit begins.
    """

    message: bytes
    new_state: GroupState = attrs.field(repr=False)


def decode_group_info(data: bytes) -> GroupInfo:
    """The GroupInfo an encoded MLSMessage carries (:class:`InvalidMessage` for any other kind)."""
    message = decode(MLSMessage, data)
    if not isinstance(message.message, GroupInfo):
        raise InvalidMessage(f"expected a GroupInfo, got a {message.wire_format.name.lower()}")
    return message.message


def join_by_external_commit(
    group_info: bytes | GroupInfo,
    credential: Credential,
    signature_key: KeyPair,
    *,
    ratchet_tree: RatchetTree | None = None,
    remove_leaf: int | None = None,
    psks: Sequence[PreSharedKeyID] = (),
    external_psks: Mapping[bytes, bytes] | None = None,
    capabilities: Capabilities | None = None,
    leaf_extensions: Sequence[Extension] = (),
    authenticated_data: bytes = b"",
    config: GroupConfig | None = None,
    rng: Rng | None = None,
) -> ExternalJoin:
    """Join the group of ``group_info`` by an external commit.

    ``remove_leaf`` removes our own old leaf (a resync; its credential must
    be ours).  ``psks`` are injected from ``external_psks``.
    """
    info = decode_group_info(group_info) if isinstance(group_info, bytes) else group_info
    context = info.group_context
    cs = suite(context.cipher_suite)
    tree = received_tree(info, ratchet_tree)
    checked_tree(info, tree)
    public = external_pub(info)
    if public is None:
        raise InvalidMessage("the GroupInfo has no external_pub extension: this group takes no external commits")
    kem_output, init_secret = cs.hpke.send_export(public, b"", EXTERNAL_INIT_LABEL, cs.nh, rng)
    proposals: list[Proposal] = [ExternalInit(kem_output)]
    if remove_leaf is not None:
        proposals.append(Remove(remove_leaf))
    proposals += [PreSharedKey(psk) for psk in psks]
    sender = SenderNewMemberCommit()
    effects = check_list(tree, context, sender, [Sourced(sender, p) for p in proposals])
    check_resync(tree, effects.removes, credential)
    tree = tree.apply((), effects.removes, ())[0]
    leaf_key = cs.generate_hpke_key_pair(rng)
    leaf = own_leaf_node(
        cs, credential, signature_key, leaf_key.public, capabilities=capabilities, leaf_extensions=leaf_extensions
    )
    tree, own = place_joiner(tree, leaf, context)
    provisional = attrs.evolve(context, epoch=context.epoch + 1, tree_hash=tree.tree_hash())
    created = create_update_path(tree, TreePrivate.for_leaf(own, leaf_key), signature_key.private, provisional, rng=rng)
    entries = tuple(ProposalByValue(p) for p in proposals)
    framed = FramedContent(
        context.group_id, context.epoch, sender, authenticated_data, Commit(entries, created.update_path)
    )
    authenticated = sign_content(cs, signature_key.private, WireFormat.MLS_PUBLIC_MESSAGE, framed, context)
    interim = interim_transcript_hash(cs, context.confirmed_transcript_hash, info.confirmation_tag)
    confirmed = confirmed_transcript_hash(cs, interim, authenticated)
    new_context = attrs.evolve(created.group_context, confirmed_transcript_hash=confirmed)
    external = dict(external_psks or {})
    psk_secret = psk_secret_for(cs, context.group_id, effects.psks, external, {})
    epoch = next_epoch(cs, init_secret, created.commit_secret, psk_secret, new_context)
    tag = confirmation_tag(cs, epoch.secrets.confirmation_key, confirmed)
    message = public_message(cs, with_confirmation_tag(authenticated, tag), None)
    start = EpochStart(new_context, created.tree, created.private, epoch.secrets, tag)
    state = first_state(start, signature_key.private, config or GroupConfig(), external_psks=external)
    return ExternalJoin(encode(MLSMessage(ProtocolVersion.MLS10, message)), state)


def place_joiner(tree: Tree, leaf: LeafNode, context: GroupContext) -> tuple[Tree, int]:
    """Put an external joiner's leaf in the leftmost free position, checked like any added member's.

    Its keys must be new to the tree, its credential type supported both
    ways, and it must support every group context extension and whatever
    ``required_capabilities`` names (RFC 9420 sections 7.3, 13.4).
    """
    missing = ext.unsupported_by(leaf, context.extensions)
    if missing:
        raise UnsupportedExtension(f"the joiner does not support group extensions {missing}")
    required = ext.required_capabilities(context.extensions)
    if required is not None:
        check_required_capabilities("the joiner's leaf", leaf, required)
    placed, index = tree.add(leaf)
    validate_leaf_in_tree(placed, leaf, index)
    return placed, index


def check_resync(tree: Tree, removes: Sequence[int], credential: Credential) -> None:
    """An external commit may remove only the joiner's own old leaf: one with the same credential."""
    for leaf in removes:
        if tree.member(leaf).credential != credential:
            raise InvalidCommit(
                f"an external commit may remove only the joiner's old leaf; leaf {leaf} is another client"
            )
