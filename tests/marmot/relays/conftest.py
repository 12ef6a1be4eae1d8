"""Relays for the transport's tests: two real ones (both kinds, shared per session), fresh ones, a dead address."""

from __future__ import annotations

import pytest

from protocols.marmot.relays import NostrRelays, RelayActivity
from tests._peers import PeerUnavailable, peer_missing
from tests.relay_servers import (
    LocalRelayServer,
    NostrRelayServer,
    free_port,
    running_local_relay,
    start_local_relay,
    start_nostr_relay,
)

#: Every real relay here answers at most this many events per REQ, so fetches page.
CAP = 7


@pytest.fixture(scope="session")
def local_relay():
    """nostr-sdk's LocalRelay, capped at CAP events per REQ."""
    with running_local_relay(max_filter_limit=CAP) as server:
        yield server


@pytest.fixture(scope="session")
def nostr_relay(tmp_path_factory):
    """The nostr-relay package in its own process, capped at CAP events per REQ."""
    try:
        server = start_nostr_relay(tmp_path_factory.mktemp("nostr-relay"), max_limit=CAP)
    except PeerUnavailable as missing:
        peer_missing(str(missing))
    yield server
    server.stop()


@pytest.fixture(params=["local_relay", "nostr_relay"], ids=["LocalRelay", "nostr-relay"])
def relay(request):
    """Each shared real relay in turn (a server object: ``.url``, ``.name``)."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def relay_url(relay) -> str:
    """Each shared real relay's address in turn."""
    return relay.url


@pytest.fixture
def two_relays(local_relay, nostr_relay) -> tuple[str, str]:
    """Both real relays at once."""
    return (local_relay.url, nostr_relay.url)


@pytest.fixture(params=["LocalRelay", "nostr-relay"])
def own_relay(request, tmp_path):
    """A relay of each kind for this test alone, free to be stopped and started again."""
    server: LocalRelayServer | NostrRelayServer
    try:
        if request.param == "LocalRelay":
            server = start_local_relay(max_filter_limit=CAP)
        else:
            server = start_nostr_relay(tmp_path / "relay", max_limit=CAP)
    except PeerUnavailable as missing:
        peer_missing(str(missing))
    yield server
    server.stop()


@pytest.fixture
def dead_url() -> str:
    """An address on 127.0.0.1 where nothing listens."""
    return f"ws://127.0.0.1:{free_port()}"


@pytest.fixture
def activity() -> list[RelayActivity]:
    """What the transport under test reported."""
    return []


@pytest.fixture
def transport(activity) -> NostrRelays:
    """The real WebSocket transport, reporting into ``activity``."""
    return NostrRelays(observe=activity.append)
