"""Errors of the secret tree, PSKs, key schedule and transcript hashes.

Each refines the library error that already means the same thing, so callers
catching :class:`~protocols.libraries.mls.errors.KeyAlreadyUsed` or
:class:`~protocols.libraries.mls.errors.InvalidArgument` keep working.  Messages name
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


class _AboutGeneration:
    """Keeps the ratchet and generation a refusal is about: ``leaf``, ``kind`` and ``generation``."""

    leaf: int
    kind: str
    generation: int

    def _about(self, leaf: int, kind: str, generation: int) -> str:
        self.leaf, self.kind, self.generation = leaf, kind, generation
        return f"the {kind} key of generation {generation} of leaf {leaf}"


class GenerationReused(_AboutGeneration, KeyAlreadyUsed):
    """The key of this generation was already handed out and deleted (a replay, or our own message)."""

    def __init__(self, leaf: int, kind: str, generation: int) -> None:
        super().__init__(f"{self._about(leaf, kind, generation)} was already used")


class GenerationExpired(_AboutGeneration, KeyAlreadyUsed):
    """The generation lies behind the out-of-order window, so its key was deleted unused.

    ``oldest_kept`` is the oldest generation whose key the window still keeps.
    """

    def __init__(self, leaf: int, kind: str, generation: int, oldest_kept: int) -> None:
        self.oldest_kept = oldest_kept
        about = self._about(leaf, kind, generation)
        super().__init__(f"{about} is gone: keys older than generation {oldest_kept} are not kept")


class GenerationTooFarAhead(_AboutGeneration, MlsError):
    """The generation is further ahead of the ratchet than the window lets a receiver step.

    The message may be genuine; refusing it bounds the work one message can cause.
    ``next_generation`` is where the ratchet stands.
    """

    def __init__(self, leaf: int, kind: str, generation: int, next_generation: int, limit: int) -> None:
        self.next_generation = next_generation
        about = self._about(leaf, kind, generation)
        super().__init__(f"{about} is more than {limit} past generation {next_generation}, where the ratchet stands")


class NotACommit(InvalidMessage):
    """Transcript hashes cover commits only, and this content is something else."""


class InvalidPsk(InvalidArgument):
    """A pre-shared key list the PSK schedule cannot use (a nonce of the wrong length, too many PSKs)."""
