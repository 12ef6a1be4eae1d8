"""Fixtures: the real-client fixtures of the node tests (a peer venv, client processes, the ceiling node,
``tessera serve``'s own node), and a connection to the ceiling node for the Tessera side."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from protocols.libraries.xmtp_mls import XmtpNode
from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.conftest import ceiling_node, libxmtp_client, libxmtp_python, xmtp_node  # noqa: F401


@pytest.fixture
def node(ceiling_node: CeilingNode) -> Iterator[XmtpNode]:  # noqa: F811
    with XmtpNode(ceiling_node.url) as connected:
        yield connected
