"""The ``ts_mls`` fixture: one ts-mls driver process per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from .ts_mls import REQUIRE_PEERS, Peer, PeerUnavailable, start_peer


@pytest.fixture(scope="session")
def ts_mls() -> Iterator[Peer]:
    """A running ts-mls peer; skips when Node.js or the install is missing, unless TESSERA_REQUIRE_PEERS=1."""
    try:
        peer = start_peer()
    except PeerUnavailable as error:
        if os.environ.get(REQUIRE_PEERS) == "1":
            pytest.fail(f"{error} ({REQUIRE_PEERS}=1)")
        pytest.skip(str(error))
    yield peer
    peer.close()
