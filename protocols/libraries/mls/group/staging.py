"""What committer and receivers both compute from a commit's proposals, before any path (RFC 9420 section 12.4).

Both sides must reach the same tree, the same provisional GroupContext and
the same PSK secret from the same list, so they share this code.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..messages import GroupContext, Sender
from ..tree.ratchet_tree import RatchetTree
from ..tree.validation import validate_leaf_in_tree
from . import extensions as ext
from .epoch import own_resumption_psks, psk_secret_for
from .proposal_list import Effects, Sourced, check_list
from .state import GroupState
from .summary import CommitSummary


@attrs.frozen
class Staged:
    """A commit's proposals applied.

    Attributes:
        proposals: the proposals, with their senders.
        effects: what they change.
        tree: the tree after them (before any UpdatePath).
        added: the leaf of each added member, in list order.
        provisional: the next epoch's GroupContext with ``tree``'s hash and
            the old confirmed transcript hash; a path replaces the tree hash.
        psk_secret: the PSK secret of the PSKs the commit injects.
    """

    proposals: tuple[Sourced, ...]
    effects: Effects
    tree: RatchetTree
    added: tuple[int, ...]
    provisional: GroupContext
    psk_secret: bytes = attrs.field(repr=False)


def stage(
    state: GroupState,
    committer: Sender,
    proposals: Sequence[Sourced],
    *,
    now: int | None = None,
) -> Staged:
    """Check ``proposals`` as a commit from ``committer`` and apply them to ``state``'s tree."""
    effects = check_list(state.tree, state.context, committer, proposals, now=now)
    tree, added = state.tree.apply(effects.updates, effects.removes, (kp.leaf_node for kp in effects.adds))
    for leaf in (*added, *(leaf for leaf, _ in effects.updates)):
        validate_leaf_in_tree(tree, tree.member(leaf), leaf)
    extensions = state.context.extensions if effects.extensions is None else effects.extensions
    if effects.extensions is not None:
        ext.check_group_extensions(extensions, tree.members())
    provisional = attrs.evolve(state.context, epoch=state.epoch + 1, tree_hash=tree.tree_hash(), extensions=extensions)
    secret = psk_secret_for(state.suite, state.group_id, effects.psks, state.external_psks, own_resumption_psks(state))
    return Staged(tuple(proposals), effects, tree, added, provisional, secret)


def summarize(
    state: GroupState, staged: Staged, committer: Sender, committer_leaf: int, has_path: bool
) -> CommitSummary:
    """What the staged commit changes, named against ``state``'s tree (removed leaves as they were)."""
    effects = staged.effects
    updated = {leaf for leaf, _ in effects.updates}
    if has_path:
        updated.add(committer_leaf)
    return CommitSummary(
        committer=committer,
        committer_leaf=committer_leaf,
        added=tuple((leaf, staged.tree.member(leaf)) for leaf in staged.added),
        removed=tuple((leaf, state.tree.member(leaf)) for leaf in effects.removes),
        self_removed=effects.self_removes,
        updated=tuple(sorted(updated)),
        extensions_changed=effects.extensions is not None,
        reinit=effects.reinit,
        new_epoch=state.epoch + 1,
    )
