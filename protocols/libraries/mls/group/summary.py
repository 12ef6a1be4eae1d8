"""What a commit changed in a group, as its committer and every receiver report it."""

from __future__ import annotations

import attrs

from ..messages import LeafNode, ReInit, Sender


@attrs.frozen
class CommitSummary:
    """What a commit changed in the group.

    Attributes:
        committer: who committed (a member's leaf, or a new member joining by external commit).
        committer_leaf: the committer's leaf in the new epoch.
        added: ``(leaf, leaf node)`` of each member added.
        removed: ``(leaf, leaf node)`` of each member removed, as they were.
        self_removed: the leaves of ``removed`` that left by their own
            SelfRemove proposal (draft-ietf-mls-extensions), not by a Remove.
        updated: the leaves that changed keys (Updates, and the committer's path).
        extensions_changed: whether the group context extensions changed.
        reinit: the ReInit the commit applied: the group is closed.
        new_epoch: the epoch the commit began.
    """

    committer: Sender
    committer_leaf: int
    added: tuple[tuple[int, LeafNode], ...] = attrs.field(repr=lambda a: repr([leaf for leaf, _ in a]))
    removed: tuple[tuple[int, LeafNode], ...] = attrs.field(repr=lambda a: repr([leaf for leaf, _ in a]))
    self_removed: tuple[int, ...]
    updated: tuple[int, ...]
    extensions_changed: bool
    reinit: ReInit | None
    new_epoch: int
