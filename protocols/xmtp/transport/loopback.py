"""An in-process delivery service with the contract of ``tessera serve``, for fast tests.

One :class:`LoopbackHub` plays the server; each client database talks to it
through its own :class:`LoopbackService`.  It keeps the rules clients rely
on (docs/server-protocol.md): server order, the first commit of an epoch
wins and later ones are stored superseded, a payload sent twice is stored
once, only members read and send, a Welcome is the ticket to join, and
KeyPackages are handed out once.  ``fail_next`` makes the next calls fail
as an unreachable server would.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence

import attrs

from protocols.libraries import mls
from protocols.libraries.delivery.codes import ErrorCode
from protocols.libraries.delivery.records import BY_CONTENT_TYPE
from protocols.xmtp.errors import ServiceRefused, ServiceUnavailable
from protocols.xmtp.transport.interface import (
    COMMIT,
    WELCOME,
    Binding,
    Page,
    Receipt,
    ServerMessage,
)


@attrs.define
class _Stored:
    message: ServerMessage
    recipient: str | None


@attrs.define
class LoopbackHub:
    """The shared state of the loopback service: every group, message, KeyPackage and binding."""

    messages: list[_Stored] = attrs.Factory(list)
    members: dict[bytes, set[str]] = attrs.Factory(dict)
    key_packages: dict[str, list[bytes]] = attrs.Factory(dict)
    identities: dict[str, dict[str, bytes]] = attrs.Factory(dict)
    acknowledged: dict[str, set[str]] = attrs.Factory(dict)
    failures: int = 0
    _winners: dict[tuple[bytes, int], str] = attrs.Factory(dict)
    _by_payload: dict[tuple[bytes, bytes], ServerMessage] = attrs.Factory(dict)
    _ids: itertools.count[int] = attrs.Factory(lambda: itertools.count(1))
    _sequences: dict[bytes, int] = attrs.Factory(dict)
    _lock: threading.Lock = attrs.Factory(threading.Lock)

    def connect(self, installation: str) -> LoopbackService:
        return LoopbackService(self, installation)

    def fail_next(self, calls: int) -> None:
        """The next ``calls`` requests, from any client, fail as if the server were down."""
        self.failures = calls

    def _check_up(self) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise ServiceUnavailable("loopback service: simulated outage")

    def _member(self, group_id: bytes, installation: str) -> None:
        if installation not in self.members.get(group_id, set()):
            raise ServiceRefused(
                ErrorCode.NOT_A_MEMBER, f"installation {installation[:16]} is not in group {group_id.hex()}"
            )

    def _store(self, group_id: bytes, sender: str, payload: bytes, recipient: str | None) -> Receipt:
        known = self._by_payload.get((group_id, payload))
        if known is not None:
            return Receipt(known.id, known.server_timestamp_us, known.superseded, True)
        message_type, epoch = _classify(group_id, payload, recipient, self.members.get(group_id, set()))
        number = next(self._ids)
        message_id = f"{number:026d}"
        superseded = False
        if message_type == COMMIT:
            winner = self._winners.setdefault((group_id, epoch), message_id)
            superseded = winner != message_id
        sequence = self._sequences[group_id] = self._sequences.get(group_id, 0) + 1
        stored = ServerMessage(
            message_id, group_id, sender, number, payload, message_type, epoch, superseded, sequence=sequence
        )
        self.messages.append(_Stored(stored, recipient))
        self._by_payload[(group_id, payload)] = stored
        return Receipt(message_id, number, superseded, False)


def _classify(group_id: bytes, payload: bytes, recipient: str | None, members: set[str]) -> tuple[int, int]:
    """The message type and epoch of a payload, from its cleartext only (the server never decrypts)."""
    if recipient is not None:
        try:
            mls.welcome_refs(payload)
        except mls.MlsError as exc:
            raise ServiceRefused(ErrorCode.MALFORMED_PAYLOAD, str(exc)) from None
        if recipient in members:
            raise ServiceRefused(ErrorCode.RECIPIENT_IS_MEMBER, f"{recipient[:16]} is already in the group")
        return WELCOME, 0
    try:
        header = mls.peek(payload)
    except mls.MlsError as exc:
        raise ServiceRefused(ErrorCode.MALFORMED_PAYLOAD, str(exc)) from None
    if header.group_id != group_id:
        raise ServiceRefused(ErrorCode.WRONG_GROUP, "the payload names another group")
    return BY_CONTENT_TYPE[header.content_type], header.epoch


def _after(cursor: str | None) -> int:
    return 0 if cursor is None else int(cursor.split(".", 1)[1])


@attrs.define
class LoopbackService:
    """One installation's connection to a :class:`LoopbackHub`."""

    hub: LoopbackHub
    installation: str

    def send(self, group_id: bytes, payload: bytes, *, recipient: str | None = None) -> Receipt:
        with self.hub._lock:
            self.hub._check_up()
            self.hub._member(group_id, self.installation)
            return self.hub._store(group_id, self.installation, payload, recipient)

    def history_after(self, group_id: bytes, cursor: str | None, limit: int) -> Page:
        with self.hub._lock:
            self.hub._check_up()
            self.hub._member(group_id, self.installation)
            start = _after(cursor)
            found = [
                s.message for s in self.hub.messages if s.message.group_id == group_id and int(s.message.id) > start
            ]
        return Page(tuple(found[:limit]), len(found) > limit)

    def welcomes_after(self, cursor: str | None, limit: int) -> Page:
        with self.hub._lock:
            self.hub._check_up()
            start = _after(cursor)
            found = [
                s.message for s in self.hub.messages if s.recipient == self.installation and int(s.message.id) > start
            ]
        return Page(tuple(found[:limit]), len(found) > limit)

    def join(self, group_id: bytes) -> None:
        with self.hub._lock:
            self.hub._check_up()
            members = self.hub.members.setdefault(group_id, set())
            invited = any(
                s.recipient == self.installation and s.message.group_id == group_id for s in self.hub.messages
            )
            if members and self.installation not in members and not invited:
                raise ServiceRefused(ErrorCode.NO_WELCOME, f"no Welcome to {self.installation[:16]} in this group")
            members.add(self.installation)

    def leave(self, group_id: bytes) -> None:
        with self.hub._lock:
            self.hub._check_up()
            self.hub.members.get(group_id, set()).discard(self.installation)

    def publish_key_packages(self, key_packages: Sequence[bytes]) -> int:
        with self.hub._lock:
            self.hub._check_up()
            stock = self.hub.key_packages.setdefault(self.installation, [])
            stock.extend(bytes(kp) for kp in key_packages)
            return len(stock)

    def fetch_key_package(self, installation: str) -> bytes:
        with self.hub._lock:
            self.hub._check_up()
            stock = self.hub.key_packages.get(installation)
            if not stock:
                raise ServiceRefused(
                    ErrorCode.NO_KEY_PACKAGE, f"installation {installation[:16]} has no KeyPackage left"
                )
            return stock.pop(0)

    def publish_identity(self, address: str, binding: bytes) -> None:
        with self.hub._lock:
            self.hub._check_up()
            self.hub.identities.setdefault(address.lower(), {})[self.installation] = bytes(binding)

    def fetch_identity(self, address: str) -> tuple[Binding, ...]:
        with self.hub._lock:
            self.hub._check_up()
            found = self.hub.identities.get(address.lower(), {})
            return tuple(Binding(installation, found[installation]) for installation in sorted(found))

    def acknowledge(self, message_ids: Sequence[str]) -> None:
        with self.hub._lock:
            self.hub._check_up()
            self.hub.acknowledged.setdefault(self.installation, set()).update(message_ids)

    def close(self) -> None:
        return None
