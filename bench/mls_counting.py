"""Counting the MLS engine's HPKE, hash and key-derivation work without touching the engine.

:func:`counting` swaps counting wrappers onto the classes every suite
shares (``Hpke.seal``/``open``, ``CipherSuite.hash`` and
``DhKem.derive_key_pair``) for the length of a ``with`` block and puts the
originals back after it.  The wrappers cost a little time, so timed runs
happen outside the block and one more run of the same operation is
counted inside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from protocols.libraries.mls.crypto.hpke import Hpke
from protocols.libraries.mls.crypto.kem import DhKem
from protocols.libraries.mls.crypto.suites import CipherSuite


@attrs.define
class Counts:
    """Operations seen inside one :func:`counting` block.

    Attributes:
        hpke: HPKE single-shot seals and opens (EncryptWithLabel, DecryptWithLabel: path secrets, Welcome secrets).
        hashes: calls of the suite's hash (tree hashes, parent hashes, transcript hashes, refs).
        key_pairs: DeriveKeyPair runs (node keys from path secrets, fresh leaf and HPKE ephemeral keys).
    """

    hpke: int = 0
    hashes: int = 0
    key_pairs: int = 0

    def as_dict(self) -> dict[str, int]:
        return attrs.asdict(self)


def _counted(original: Callable[..., Any], bump: Callable[[], None]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bump()
        return original(*args, **kwargs)

    return wrapper


@contextmanager
def counting() -> Iterator[Counts]:
    """Count HPKE seals/opens, hashes and DeriveKeyPair runs made inside the block, in every suite."""
    counts = Counts()

    def hpke() -> None:
        counts.hpke += 1

    def hashes() -> None:
        counts.hashes += 1

    def key_pairs() -> None:
        counts.key_pairs += 1

    # Class attributes, not instances: the suites are frozen, slotted and shared by the whole engine.
    patches: tuple[tuple[type, str, Callable[[], None]], ...] = (
        (Hpke, "seal", hpke),
        (Hpke, "open", hpke),
        (CipherSuite, "hash", hashes),
        (DhKem, "derive_key_pair", key_pairs),
    )
    originals = [(owner, name, owner.__dict__[name]) for owner, name, _ in patches]
    try:
        for owner, name, bump in patches:
            setattr(owner, name, _counted(owner.__dict__[name], bump))
        yield counts
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
