"""Errors of the secret tree, PSKs, key schedule and transcript hashes.

Each refines the library error that already means the same thing, so callers
catching :class:`~protocols.mls.errors.KeyAlreadyUsed` or
:class:`~protocols.mls.errors.InvalidArgument` keep working.  Messages name
leaves, generations and lengths, never key material.
"""

from __future__ import annotations

from ..errors import InvalidArgument, InvalidMessage, KeyAlreadyUsed, MlsError


class UnknownLeaf(InvalidArgument):
    """A leaf index outside the secret tree.

    ``leaf`` is the index asked for, ``n_leaves`` the tree's size.
    """

    def __init__(self, leaf: int, n_leaves: int) -> None:
        self.leaf = leaf
        self.n_leaves = n_leaves
        super().__init__(f"leaf {leaf} is outside a secret tree of {n_leaves} leaves")


class GenerationReused(KeyAlreadyUsed):
    """The key of this generation was already handed out and deleted (a replay, or our own message)."""

    def __init__(self, leaf: int, kind: str, generation: int) -> None:
        self.leaf = leaf
        self.generation = generation
        super().__init__(f"the {kind} key of generation {generation} of leaf {leaf} was already used")


class GenerationExpired(KeyAlreadyUsed):
    """The generation lies behind the out-of-order window, so its key was deleted unused."""

    def __init__(self, leaf: int, kind: str, generation: int, oldest_kept: int) -> None:
        self.leaf = leaf
        self.generation = generation
        self.oldest_kept = oldest_kept
        super().__init__(
            f"the {kind} key of generation {generation} of leaf {leaf} is gone: "
            f"keys older than generation {oldest_kept} are not kept"
        )


class GenerationTooFarAhead(MlsError):
    """The generation is further ahead of the ratchet than the window lets a receiver step.

    The message may be genuine; refusing it bounds the work one message can cause.
    """

    def __init__(self, leaf: int, kind: str, generation: int, next_generation: int, limit: int) -> None:
        self.leaf = leaf
        self.generation = generation
        super().__init__(
            f"the {kind} ratchet of leaf {leaf} is at generation {next_generation}; "
            f"generation {generation} is more than {limit} ahead"
        )


class NotACommit(InvalidMessage):
    """Transcript hashes cover commits only, and this content is something else."""


class InvalidPsk(InvalidArgument):
    """A pre-shared key list the PSK schedule cannot use (a nonce of the wrong length, too many PSKs)."""
