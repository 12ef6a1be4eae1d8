"""Fixtures for real XMTP clients (libxmtp v1.10.0 through ``xmtp-bindings``) against an XMTP node."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests._peers import PeerUnavailable, peer_missing
from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import LibxmtpClient, client_factory, install
from tests.xmtp_node.node_process import NodeProcess, new_node


@pytest.fixture(scope="session")
def libxmtp_python() -> Path:
    """The interpreter of the peer venv holding ``xmtp-bindings``, installed on first use."""
    try:
        return install()
    except PeerUnavailable as error:
        peer_missing(str(error))


@pytest.fixture
def libxmtp_client(libxmtp_python: Path, tmp_path: Path) -> Iterator[Callable[[str], LibxmtpClient]]:
    """``libxmtp_client(name)``: a started (not yet registered) real client with its database under ``tmp_path``."""
    make, close_all = client_factory(libxmtp_python, tmp_path / "clients")
    try:
        yield make
    finally:
        close_all()


@pytest.fixture
def ceiling_node() -> Iterator[CeilingNode]:
    """The in-memory ceiling node (tests/xmtp_node/ceiling_node.py) on a free port of 127.0.0.1."""
    with CeilingNode() as node:
        yield node


@pytest.fixture
def xmtp_node(tmp_path: Path) -> Iterator[NodeProcess]:
    """``tessera serve --xmtp-port 0`` on a new encrypted database, as its own process."""
    with new_node(tmp_path) as node:
        yield node
