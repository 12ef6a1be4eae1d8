"""Fixtures: what real libxmtp clients uploaded (recorded), and a fresh inbox of forged keys."""

from __future__ import annotations

import attrs
import pytest

from protocols.libraries.xmtp_identity import InboxState, apply_identity_update
from tests.xmtp_identity import forge
from tests.xmtp_identity.capture import Captured, recorded

# The real-client fixtures of the node tests, shared: a peer venv, client processes, the ceiling node.
from tests.xmtp_node.conftest import ceiling_node, libxmtp_client, libxmtp_python  # noqa: F401


@pytest.fixture(scope="session")
def captured() -> Captured:
    """The uploads of the scenario in tests/xmtp_identity/capture.py, as recorded in data/captured.json."""
    return recorded()


@attrs.frozen
class Inbox:
    """An inbox created by ``wallet`` with one installation added by it, and its state after that update."""

    wallet: forge.Wallet
    installation: forge.Installation
    state: InboxState

    @property
    def inbox_id(self) -> str:
        return self.state.inbox_id


@pytest.fixture
def inbox() -> Inbox:
    wallet, installation = forge.Wallet(), forge.Installation()
    update = forge.signed_update(
        forge.inbox_of(wallet),
        forge.create_inbox(wallet),
        forge.add(installation.member(), wallet.sign, installation.sign),
    )
    return Inbox(wallet, installation, apply_identity_update(None, update, sequence_id=1))
