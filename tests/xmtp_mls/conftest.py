"""Fixtures: the real-client fixtures of the node tests (a peer venv, client processes, the ceiling node)."""

from __future__ import annotations

from tests.xmtp_node.conftest import ceiling_node, libxmtp_client, libxmtp_python  # noqa: F401
