"""Real libxmtp clients and the ceiling node, shared with tests/xmtp_node."""

from __future__ import annotations

from tests.xmtp_node.conftest import ceiling_node, libxmtp_client, libxmtp_python  # noqa: F401
