"""Which delivery service a database talks to: the one its identity registered with.

The tick's jobs and ``tessera xmtp`` commands ask :func:`service_for`; the
first call opens a :class:`~.transport.websocket.WebSocketService` on the
identity's server URL and keeps it for the database's lifetime.  Tests and
embedders hand in another service (the loopback) with :func:`use_service`.
"""

from __future__ import annotations

import weakref
from typing import Any

from protocols.xmtp.errors import NotWebSocketServer
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.interface import DeliveryService

_SERVICES: weakref.WeakKeyDictionary[Any, DeliveryService] = weakref.WeakKeyDictionary()
SCHEMES = ("ws://", "wss://")


def use_service(runtime: Any, service: DeliveryService) -> None:
    """Make ``runtime``'s database talk through ``service`` (replacing any it had)."""
    _SERVICES[runtime.db] = service


def has_identity(runtime: Any) -> bool:
    with runtime.db.read():
        return runtime.db.has_table("xmtp_groups") and Vault.of(runtime.db).has_identity()


def service_for(runtime: Any, *, keep_pushes: bool = False) -> DeliveryService:
    """The database's delivery service, opened on first use from its identity's server URL."""
    found = _SERVICES.get(runtime.db)
    if found is not None:
        return found
    from protocols.xmtp.transport.websocket import WebSocketService

    with runtime.db.read():
        identity = Vault.of(runtime.db).identity()
    if not identity.server.startswith(SCHEMES):
        raise NotWebSocketServer(
            f"this identity's server is {identity.server!r}, not a ws:// or wss:// URL of `tessera serve`; "
            "make the identity with `tessera xmtp identity new --server ws://HOST:PORT`"
        )
    service = WebSocketService(identity.server, identity.installation.signing_key, keep_pushes=keep_pushes)
    _SERVICES[runtime.db] = service
    return service


def close_service(runtime: Any) -> None:
    service = _SERVICES.pop(runtime.db, None)
    if service is not None:
        service.close()
