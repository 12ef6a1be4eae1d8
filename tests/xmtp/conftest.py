"""Members of XMTP-style groups, each on its own database, talking through one in-process loopback service."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from core.app import App
from core.clock import Clock
from core.settings import Settings
from protocols import xmtp
from protocols.xmtp import keypackages, publishing, queries, sync
from protocols.xmtp.kinds import IntentState
from protocols.xmtp.private_publishing import PrivatePublisher
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.loopback import LoopbackHub
from tests.helpers import open_new_test_app
from tests.xmtp_node.node_process import NodeProcess, new_node


@attrs.define
class Member:
    """One person on one database: commands, a publish pass, a sync pass, and what the tables say."""

    app: App
    service: Any  # a LoopbackService, or a LyingService in front of a real server (tests/xmtp/served.py)

    @property
    def address(self) -> str:
        with self.app.db.read():
            return Vault.of(self.app.db).identity().address

    def run(self, command: str, **params: Any) -> Any:
        return self.app.runtime.run_command(f"xmtp.{command}", params)

    def create_group(self, name: str = "") -> bytes:
        group_id = os.urandom(16)
        self.run("create_group", name=name, group_id=group_id.hex())
        return group_id

    def publish(self) -> int:
        return publishing.publish_pass(self.app.runtime, PrivatePublisher(self.service))

    def sync(self) -> sync.SyncReport:
        return sync.sync_all(self.app.runtime, self.service)

    def settle(self) -> None:
        self.publish()
        self.sync()

    def texts(self, group_id: bytes) -> list[str]:
        with self.app.db.read():
            rows = queries.messages(self.app.db, group_id, 10_000)
        return [bytes(row[5]).decode() for row in reversed(rows) if row[2] == 1]

    def intents(self) -> list[queries.IntentRow]:
        with self.app.db.read():
            return queries.intents(self.app.db)

    def intent_states(self) -> list[IntentState]:
        return [row.state for row in self.intents()]

    def epoch(self, group_id: bytes) -> int:
        with self.app.db.read():
            return Vault.of(self.app.db).group(group_id).epoch

    def roster(self, group_id: bytes) -> list[str]:
        from protocols.xmtp import members

        with self.app.db.read():
            state = Vault.of(self.app.db).group(group_id)
        return sorted(set(members.addresses(state).values()))

    def events(self, kind: str) -> list[dict[str, Any]]:
        rows = self.app.db.all(
            "SELECT payload FROM events WHERE protocol = 'xmtp' AND event_type = ? ORDER BY seq", (kind,)
        )
        return [json.loads(row[0]) for row in rows]


MakeMember = Callable[[], Member]


@pytest.fixture
def hub() -> LoopbackHub:
    return LoopbackHub()


@pytest.fixture(autouse=True)
def xmtp_state_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """State is sealed under the key derived from the database's key file, not the deprecated variables."""
    monkeypatch.delenv("TESSERA_XMTP_STATE_KEY", raising=False)
    monkeypatch.delenv("TESSERA_XMTP_STATE_KEY_FILE", raising=False)


@pytest.fixture
def make_member(tmp_path: Path, settings: Settings, clock: Clock, hub: LoopbackHub) -> Iterator[MakeMember]:
    """``make_member()``: a new identity on the hub, in an app of its own (on a copy of an empty database: see
    :func:`~tests.helpers.open_new_test_app`)."""
    opened: list[App] = []

    def make() -> Member:
        app = open_new_test_app(str(tmp_path / f"member{len(opened)}.db"), settings, [xmtp], ["xmtp"], clock=clock)
        opened.append(app)
        app.runtime.run_command("xmtp.identity_new", {"server": "loopback"})
        with app.db.read():
            installation = Vault.of(app.db).identity().installation_id
        member = Member(app, hub.connect(installation))
        keypackages.register(app.runtime, member.service)
        return member

    yield make
    for app in opened:
        app.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One ``tessera serve`` process for a test module's members (each test makes its own group)."""
    from .served import server_process

    process = server_process(tmp_path_factory.mktemp("serve"))
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def make_served(make_app: Any, server: Any) -> Iterator[MakeMember]:
    """``make_served()``: a member registered with the module's server, behind an honest LyingService."""
    from .served import served_members

    yield from served_members(make_app, server)


@pytest.fixture
def server_store(server: Any, settings: Any) -> Iterator[Any]:
    """The module server's store, opened in this process beside it (to expire messages as retention does)."""
    from .served import open_store

    yield from open_store(server, settings)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    """A real ``tessera serve --xmtp-port`` process, one a test module: the node profile's members register there."""
    with new_node(tmp_path_factory.mktemp("node")) as started:
        yield started
