"""Entering an epoch: the one place a state's secrets, view and window of earlier epochs are rebuilt.

Creating a group, joining it, and every commit (ours or another member's)
end here, so all of them keep the same things and drop the same things.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import attrs

from ..crypto import CipherSuite
from ..errors import InvalidArgument
from ..messages import ExternalPSK, GroupContext, LeafNode, PreSharedKeyID, ReInit, ResumptionPSK
from ..protection import EpochView, SignatureKeys
from ..schedule import EpochSecrets, interim_transcript_hash, psk_secret
from ..tree.private_tree import TreePrivate
from ..tree.ratchet_tree import RatchetTree
from .refusals import MissingPsk
from .state import EpochKeys, GroupConfig, GroupState, PastEpoch


def signature_keys_of(members: Sequence[LeafNode | None]) -> SignatureKeys:
    """A lookup of each leaf's signature key from the leaves of one epoch."""

    def lookup(leaf: int) -> bytes | None:
        node = members[leaf] if 0 <= leaf < len(members) else None
        return None if node is None else node.signature_key

    return lookup


def leaves_of(tree: RatchetTree) -> tuple[LeafNode | None, ...]:
    """Every leaf position of ``tree``, ``None`` where blank (leaves sit at the even node indices)."""
    return cast("tuple[LeafNode | None, ...]", tree.nodes[::2])


@attrs.frozen
class EpochStart:
    """Everything a new epoch is made from.

    Attributes:
        context: the new GroupContext (its confirmed transcript hash included).
        tree: the new ratchet tree.
        private: our private node keys in it.
        secrets: the key schedule's output for the epoch.
        confirmation_tag: the tag of the commit that begins it.
    """

    context: GroupContext
    tree: RatchetTree
    private: TreePrivate
    secrets: EpochSecrets
    confirmation_tag: bytes


def first_state(
    start: EpochStart,
    signature_private: bytes,
    config: GroupConfig,
    *,
    external_psks: Mapping[bytes, bytes] | None = None,
) -> GroupState:
    """The state of a member entering its first epoch of the group (creator or joiner)."""
    cs = start.tree.suite
    return GroupState(
        suite=cs,
        context=start.context,
        tree=start.tree,
        private=start.private,
        signature_private=signature_private,
        keys=EpochKeys.kept_from(start.secrets, start.confirmation_tag),
        view=_view(start, config),
        interim_transcript_hash=interim_transcript_hash(
            cs, start.context.confirmed_transcript_hash, start.confirmation_tag
        ),
        resumption_psks={start.context.epoch: start.secrets.resumption_psk},
        external_psks=external_psks or {},
        config=config,
    )


def next_state(state: GroupState, start: EpochStart, reinit: ReInit | None = None) -> GroupState:
    """``state`` moved into the epoch ``start`` describes; the epoch left joins the window of late epochs."""
    if start.context.epoch != state.epoch + 1:
        raise InvalidArgument(f"epoch {state.epoch} is followed by {state.epoch + 1}, not {start.context.epoch}")
    config = state.config
    left = PastEpoch(state.view, state.keys.exporter_secret, leaves_of(state.tree))
    past = (left, *state.past)[: config.max_past_epochs]
    kept_psks = {**state.resumption_psks, start.context.epoch: start.secrets.resumption_psk}
    oldest = start.context.epoch - config.max_past_epochs
    return attrs.evolve(
        state,
        context=start.context,
        tree=start.tree,
        private=start.private,
        keys=EpochKeys.kept_from(start.secrets, start.confirmation_tag),
        view=_view(start, config),
        interim_transcript_hash=interim_transcript_hash(
            state.suite, start.context.confirmed_transcript_hash, start.confirmation_tag
        ),
        proposals=(),
        update_keys={},
        past=past,
        resumption_psks={epoch: psk for epoch, psk in kept_psks.items() if epoch >= oldest},
        pending_commit=None,
        reinit=reinit,
    )


def removed_state(state: GroupState) -> GroupState:
    """``state`` after a commit removed us: no current epoch to speak in, the late-message window kept."""
    return attrs.evolve(state, proposals=(), update_keys={}, pending_commit=None, active=False)


def _view(start: EpochStart, config: GroupConfig) -> EpochView:
    return EpochView.create(
        start.secrets,
        start.context,
        start.tree.n_leaves,
        start.private.leaf,
        signature_keys_of(leaves_of(start.tree)),
        config.window,
    )


def psk_secret_for(
    cs: CipherSuite,
    group_id: bytes,
    psks: Sequence[PreSharedKeyID],
    external: Mapping[bytes, bytes],
    resumption: Mapping[tuple[bytes, int], bytes],
) -> bytes:
    """The ``psk_secret`` of ``psks``, each looked up among the PSKs we hold (:class:`MissingPsk` when one is not)."""
    pairs = []
    for psk_id in psks:
        if isinstance(psk_id, ExternalPSK):
            secret = external.get(psk_id.psk_id)
            name = f"external PSK {psk_id.psk_id.hex()[:16]}"
        elif isinstance(psk_id, ResumptionPSK):
            secret = resumption.get((psk_id.psk_group_id, psk_id.psk_epoch))
            name = f"the resumption PSK of epoch {psk_id.psk_epoch}"
            if psk_id.psk_group_id != group_id:
                name += f" of group {psk_id.psk_group_id.hex()[:16]}"
        else:
            raise MissingPsk(f"{type(psk_id).__name__} is not a PSK id this engine resolves")
        if secret is None:
            raise MissingPsk(f"{name} is not held by this member; add it before processing")
        pairs.append((psk_id, secret))
    return psk_secret(cs, pairs)


def own_resumption_psks(state: GroupState) -> dict[tuple[bytes, int], bytes]:
    """The resumption PSKs ``state`` keeps, keyed as PSK ids name them."""
    return {(state.group_id, epoch): psk for epoch, psk in state.resumption_psks.items()}
