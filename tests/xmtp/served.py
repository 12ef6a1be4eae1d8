"""Members of XMTP-style groups on their own databases, talking through a real ``tessera serve``.

Each member's service is the real client transport
(:class:`~protocols.xmtp.transport.websocket.WebSocketService`) behind a
:class:`~tests.xmtp.lying.LyingService`, honest until it is given lies.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

from core.app import App
from protocols import sovereign, xmtp
from protocols.sovereign.service import Store
from protocols.xmtp import keypackages
from protocols.xmtp.connection import XmtpMember
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.websocket import WebSocketService
from tests.helpers import open_test_app
from tests.sovereign.server_helpers import ServerProcess, init_database

from .conftest import Member
from .lying import LyingService

MakeServed = Callable[[], Member]


def server_process(folder: Path) -> ServerProcess:
    db = folder / "store.db"
    init_database(db)
    return ServerProcess(db).start()


def served_members(make_app: Any, server: ServerProcess) -> Generator[MakeServed]:
    """``make()``: a new member registered with ``server``, its service a :class:`LyingService` (honest)."""
    opened: list[WebSocketService] = []

    def make() -> Member:
        app = make_app([xmtp], ["xmtp"])
        app.runtime.run_command("xmtp.identity_new", {"server": server.url})
        with app.db.read():
            key = Vault.of(app.db).identity().installation.signing_key
        honest = WebSocketService(server.url, key)
        opened.append(honest)
        service = LyingService(honest)
        app.service(XmtpMember).use(service)
        keypackages.register(app.runtime, service)
        return Member(app, service)

    try:
        yield make
    finally:
        for service in opened:
            service.close()


def liar(member: Member) -> LyingService:
    assert isinstance(member.service, LyingService)
    return member.service


def three_in_a_group(make: MakeServed, name: str = "three") -> tuple[Member, Member, Member, bytes]:
    """Alice's group with Bob and Carol in it, each at the group's first epoch after the add (any factory of
    members: served or on the loopback hub)."""
    alice, bob, carol = make(), make(), make()
    group = alice.create_group(name)
    alice.run("add_members", group=group.hex(), addresses=[bob.address, carol.address])
    alice.settle()
    alice.publish()  # the welcomes leave once the commit is read back
    for member in (bob, carol):
        member.sync()
        member.run("accept", group=group.hex())
        member.sync()
    return alice, bob, carol, group


def open_store(server: ServerProcess, settings: Any) -> Iterator[Store]:
    """The server's store opened in this process beside the running server (to expire messages, as retention
    would)."""
    app: App = open_test_app(str(server.db), settings, [sovereign], ["sovereign"])
    try:
        yield Store(app)
    finally:
        app.close()
