"""Hash ratchets of the secret tree (RFC 9420 section 9.1), one per leaf and content kind.

A ratchet holds only the secret of its next generation.  Handing out a key
derives that generation's key and nonce, replaces the secret with the next
one and forgets the old secret (section 9.2).  A receiver may step over
generations to reach a later message; the keys it steps over are kept so
late messages still decrypt, but only within the :class:`RatchetWindow`,
and each is deleted the moment it is handed out.

Values are immutable: every operation returns the ratchet that replaces the
old one.  Forward secrecy holds once the caller drops the old value.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

import attrs

from ..crypto import CipherSuite
from ..crypto.labels import derive_tree_secret, expand_with_label
from ..errors import InvalidArgument, RatchetExhausted
from ..values import replaced
from .errors import GenerationExpired, GenerationReused, GenerationTooFarAhead

#: Generations travel as uint32 (RFC 9420 section 6.3.2).
LAST_GENERATION = 0xFFFFFFFF


class RatchetKind(enum.Enum):
    """Which of a leaf's two ratchets: the value is the label that starts it (section 9)."""

    HANDSHAKE = "handshake"
    APPLICATION = "application"


def _non_negative(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int or value < 0:
        raise InvalidArgument(f"{attribute.name} must be a non-negative integer, not {value!r}")


@attrs.frozen
class RatchetWindow:
    """How far a receiving ratchet reaches around its newest generation.

    Attributes:
        out_of_order_tolerance: how many generations below the newest one
            received keep their keys for late messages.  Older keys are
            deleted unused.
        maximum_forward_distance: how many generations past the next
            expected one a message may claim; each skipped generation costs
            a key derivation, so this bounds the work one message can cause.
    """

    out_of_order_tolerance: int = attrs.field(default=128, validator=_non_negative)
    maximum_forward_distance: int = attrs.field(default=1000, validator=_non_negative)


@attrs.frozen
class RatchetKey:
    """The AEAD key and nonce of one generation, handed out once."""

    generation: int
    key: bytes = attrs.field(repr=False)
    nonce: bytes = attrs.field(repr=False)


def _no_keys() -> Mapping[int, RatchetKey]:
    return MappingProxyType({})


@attrs.frozen
class HashRatchet:
    """One ratchet's state.

    Attributes:
        kind: handshake or application, for error messages.
        leaf: the leaf the ratchet belongs to, for error messages.
        generation: the next generation not yet handed out or stepped over.
        secret: the ratchet secret of ``generation``; empty once the last
            uint32 generation is gone.
        kept: keys of stepped-over generations inside the window, by generation.
    """

    kind: RatchetKind
    leaf: int
    generation: int
    secret: bytes = attrs.field(repr=False)
    kept: Mapping[int, RatchetKey] = attrs.field(factory=_no_keys, repr=lambda kept: f"<{len(kept)} keys>")

    @classmethod
    def start(cls, cs: CipherSuite, kind: RatchetKind, leaf: int, leaf_secret: bytes) -> HashRatchet:
        """The ratchet at generation 0: ``ExpandWithLabel(leaf_secret, kind, "", Nh)``."""
        return cls(kind, leaf, 0, expand_with_label(cs, leaf_secret, kind.value, b"", cs.nh))

    def next_key(self, cs: CipherSuite) -> tuple[HashRatchet, RatchetKey]:
        """The key of the next generation, for sending; the ratchet moves past it."""
        if self.generation > LAST_GENERATION:
            raise RatchetExhausted(f"the {self.kind.value} ratchet of leaf {self.leaf} has no generations left")
        key, secret = _derive(cs, self.secret, self.generation)
        return replaced(self, generation=self.generation + 1, secret=secret), key

    def key_for(self, cs: CipherSuite, generation: int, window: RatchetWindow) -> tuple[HashRatchet, RatchetKey]:
        """The key of ``generation``, for receiving; it is deleted from the ratchet that comes back.

        Raises :class:`GenerationReused` for a key already handed out,
        :class:`GenerationExpired` for one behind the window and
        :class:`GenerationTooFarAhead` for one beyond it.
        """
        if type(generation) is not int or not 0 <= generation <= LAST_GENERATION:
            raise InvalidArgument(f"generation {generation!r} is not a uint32")
        if generation < self.generation:
            return self._take_kept(generation, window)
        if generation - self.generation > window.maximum_forward_distance:
            raise GenerationTooFarAhead(
                self.leaf, self.kind.value, generation, self.generation, window.maximum_forward_distance
            )
        return self._step_to(cs, generation, window)

    def _take_kept(self, generation: int, window: RatchetWindow) -> tuple[HashRatchet, RatchetKey]:
        oldest_kept = self.generation - 1 - window.out_of_order_tolerance
        if generation < oldest_kept:
            raise GenerationExpired(self.leaf, self.kind.value, generation, oldest_kept)
        key = self.kept.get(generation)
        if key is None:
            raise GenerationReused(self.leaf, self.kind.value, generation)
        kept = {g: k for g, k in self.kept.items() if g != generation}
        return replaced(self, kept=MappingProxyType(kept)), key

    def _step_to(self, cs: CipherSuite, generation: int, window: RatchetWindow) -> tuple[HashRatchet, RatchetKey]:
        oldest_kept = generation - window.out_of_order_tolerance
        kept = {g: k for g, k in self.kept.items() if g >= oldest_kept}
        secret = self.secret
        for skipped in range(self.generation, generation):
            key, secret = _derive(cs, secret, skipped)
            if skipped >= oldest_kept:
                kept[skipped] = key
        key, secret = _derive(cs, secret, generation)
        return replaced(self, generation=generation + 1, secret=secret, kept=MappingProxyType(kept)), key


def _derive(cs: CipherSuite, secret: bytes, generation: int) -> tuple[RatchetKey, bytes]:
    """The key and nonce of ``generation`` and the secret of the next one (none after the last)."""
    key = RatchetKey(
        generation,
        derive_tree_secret(cs, secret, "key", generation, cs.nk),
        derive_tree_secret(cs, secret, "nonce", generation, cs.nn),
    )
    following = derive_tree_secret(cs, secret, "secret", generation, cs.nh) if generation < LAST_GENERATION else b""
    return key, following
