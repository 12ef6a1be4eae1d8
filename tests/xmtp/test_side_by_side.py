"""Two XMTP members on two databases in one process, against one ``tessera serve``: each app has its own
:class:`~protocols.xmtp.connection.XmtpMember` (its own connection to the server), and closing one app closes
its connection while the other member goes on."""

from __future__ import annotations

from typing import Any

from protocols import xmtp
from protocols.xmtp import keypackages
from protocols.xmtp.connection import XmtpMember
from protocols.xmtp.transport.websocket import WebSocketService

from .conftest import Member


def _member(make_app: Any, server: Any) -> Member:
    app = make_app([xmtp], ["xmtp"])
    app.runtime.run_command("xmtp.identity_new", {"server": server.url})
    service = app.service(XmtpMember).delivery()  # opened from the identity's server URL
    keypackages.register(app.runtime, service)
    return Member(app, service)


def test_two_members_side_by_side_share_nothing_and_close_cleanly(make_app, server):
    alice, bob = _member(make_app, server), _member(make_app, server)
    assert alice.app.service(XmtpMember) is not bob.app.service(XmtpMember)
    assert isinstance(alice.service, WebSocketService) and isinstance(bob.service, WebSocketService)
    assert alice.service is not bob.service and alice.service.installation != bob.service.installation

    group = alice.create_group("side by side")
    alice.run("add_members", group=group.hex(), addresses=[bob.address])
    alice.settle()
    alice.publish()
    bob.sync()
    bob.run("accept", group=group.hex())
    alice.run("send", group=group.hex(), text="one process, two members")
    alice.settle()
    bob.sync()
    assert bob.texts(group) == ["one process, two members"]

    alice.app.close()
    assert alice.service._loop.is_closed()  # her connection went with her app
    bob.run("send", group=group.hex(), text="still here")
    bob.settle()
    assert bob.texts(group)[-1] == "still here" and not bob.service._loop.is_closed()
