"""A commit's proposals applied to the ratchet tree (RFC 9420 §12.1.1-12.1.3, §12.3).

Only Add, Update and Remove change the tree.  RFC 9420 §12.3 applies them
by kind, whatever their order in the commit: every Update (replacing its
sender's leaf), then every Remove, then every Add (each in the leftmost
blank leaf, extending the tree when there is none).  Whether the list is
valid (§12.2) is for the commit logic to decide first; here an Update from a
blank leaf or a Remove of one is refused with :class:`~.errors.NoSuchLeaf`.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from ..messages import Add, LeafNode, Proposal, Remove, Update
from .ratchet_tree import RatchetTree


@attrs.frozen
class TreeChange:
    """The tree after a commit's proposals, and where its new members sit.

    Attributes:
        tree: the new tree.
        added: the leaf index of each Add, in the order of the proposals.
    """

    tree: RatchetTree
    added: tuple[int, ...]


def apply_proposals(tree: RatchetTree, proposals: Iterable[tuple[int, Proposal]]) -> TreeChange:
    """Apply ``(sender leaf index, proposal)`` pairs to ``tree``; proposals of other kinds leave it as it is."""
    updates: list[tuple[int, LeafNode]] = []
    removes: list[int] = []
    adds: list[LeafNode] = []
    for sender, proposal in proposals:
        if isinstance(proposal, Update):
            updates.append((sender, proposal.leaf_node))
        elif isinstance(proposal, Remove):
            removes.append(proposal.removed)
        elif isinstance(proposal, Add):
            adds.append(proposal.key_package.leaf_node)
    new_tree, added = tree.apply(updates, removes, adds)
    return TreeChange(new_tree, added)
