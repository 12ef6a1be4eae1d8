"""A snapshot's signature private key must be the private half of the stored member's leaf signature key."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest

from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.errors import InvalidSnapshot
from protocols.libraries.mls.group.snapshot import restore, snapshot
from protocols.libraries.mls.group.snapshot_format import GroupStateSnapshot

from ._snapshots import life

LIFE = life(1)


def with_signature_private(data: bytes, private: bytes) -> bytes:
    stored = decode(GroupStateSnapshot, data)
    return encode(attrs.evolve(stored, state=attrs.evolve(stored.state, signature_private=private)))


@pytest.mark.parametrize(
    ("replacement", "reason"),
    [
        (lambda key: key[:-1] + bytes([key[-1] ^ 1]), "not the private half of our leaf's signature key"),
        (lambda key: key + bytes(8), "unusable"),
        (lambda key: b"", "empty"),
    ],
    ids=["another key", "a padded key", "no key"],
)
def test_a_signature_key_that_is_not_the_leafs_is_refused(replacement: Callable[[bytes], bytes], reason: str) -> None:
    state = LIFE["alice after create"]
    data = with_signature_private(snapshot(state), replacement(state.signature_private))
    with pytest.raises(InvalidSnapshot, match=reason):
        restore(data)
