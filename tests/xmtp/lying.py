"""A delivery service that lies: in front of a real one, it tampers with the pages it hands out, as told.

:class:`LyingService` wraps the real client transport (a
:class:`~protocols.xmtp.transport.websocket.WebSocketService` talking to a
real ``tessera serve``) and applies the lies it was given, one lie to each
page fetched, in order, until none is left; then it is honest again.  The
lies are what a server (or anything between it and the client) can do
without the group's keys: drop a payload, flip one byte of one, hand one out
twice, swap two, and replay one handed out earlier under an id it made up.
Everything else (sends, joins, KeyPackages, acks) passes through untouched.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from typing import Any

import attrs

from protocols.xmtp.transport.interface import APPLICATION, COMMIT, Page, ServerMessage

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
GROUPS, WELCOMES = "g", "w"


def made_up_id(like: str) -> str:
    """A ULID the server never gave: ``like``'s time part, random bits of our own."""
    return like[:10] + "".join(_CROCKFORD[b % 32] for b in os.urandom(16))


def _pick(messages: Sequence[ServerMessage], index: int | None) -> int | None:
    """Which message a lie touches: ``index`` (modulo the page), or None: the page's first commit."""
    if not messages:
        return None
    if index is not None:
        return index % len(messages)
    return next((n for n, m in enumerate(messages) if m.message_type == COMMIT), None)


@attrs.frozen
class Lie:
    """One lie about one page.

    Attributes:
        kind: ``drop``, ``flip`` (one byte of the payload), ``duplicate``, ``swap`` (with the next one) or
            ``replay`` (a message handed out by an earlier page, appended under a made-up id).
        index: which message of the page (modulo its length); None: its first commit (for ``replay``, which
            message handed out earlier, None being the first commit handed out).
        byte: for ``flip``, which byte of the payload (modulo its length).
        topic: the pages it lies about: ``g`` group histories, ``w`` our welcomes.
        numbered: for ``replay``, whether the copy keeps the server's number of the message (False: it
            carries none, as from a server that numbers nothing).
    """

    kind: str
    index: int | None = None
    byte: int = 0
    topic: str = GROUPS
    numbered: bool = True

    def apply(self, messages: list[ServerMessage], delivered: Sequence[ServerMessage]) -> bool:
        """Tamper with ``messages`` in place; whether the page offered anything to lie about."""
        if self.kind == "replay":
            return self._replay(messages, delivered)
        at = _pick(messages, self.index)
        if at is None:
            return False
        target = messages[at]
        if self.kind == "drop":
            del messages[at]
        elif self.kind == "flip":
            payload = bytearray(target.payload)
            payload[self.byte % len(payload)] ^= 0x01
            messages[at] = attrs.evolve(target, payload=bytes(payload))
        elif self.kind == "duplicate":
            messages.insert(at + 1, target)
        elif self.kind == "swap":
            if at + 1 >= len(messages):
                return False
            messages[at], messages[at + 1] = messages[at + 1], target
        else:
            raise ValueError(f"no lie {self.kind!r}")
        return True

    def _replay(self, messages: list[ServerMessage], delivered: Sequence[ServerMessage]) -> bool:
        at = _pick(delivered, self.index)
        if at is None and delivered:
            at = 0  # nothing handed out was a commit (a welcome topic): the first one, then
        if at is None:
            return False
        old = delivered[at]
        last = messages[-1] if messages else old
        copy = attrs.evolve(old, id=made_up_id(last.id), server_timestamp_us=last.server_timestamp_us)
        messages.append(copy if self.numbered else attrs.evolve(copy, sequence=None))
        return True


@attrs.define
class LyingService:
    """A :class:`~protocols.xmtp.transport.interface.DeliveryService` that tells ``lies`` before it is honest.

    ``told`` lists the lies that found something to lie about; a lie whose page offered nothing (an empty
    page, a page without a commit for a lie about commits) waits for the next page of its topic.
    ``left_out`` holds the ids of the payloads lies took out of a page."""

    honest: Any
    lies: deque[Lie] = attrs.Factory(deque)
    told: list[Lie] = attrs.Factory(list)
    delivered: dict[str, list[ServerMessage]] = attrs.Factory(dict)
    left_out: set[str] = attrs.Factory(set)

    def plan(self, *lies: Lie) -> None:
        self.lies.extend(lies)

    @property
    def lying(self) -> bool:
        return bool(self.lies)

    @property
    def installation(self) -> str:
        return str(self.honest.installation)

    def history_after(self, group_id: bytes, cursor: str | None, limit: int) -> Page:
        return self._tampered(GROUPS + group_id.hex(), GROUPS, self.honest.history_after(group_id, cursor, limit))

    def welcomes_after(self, cursor: str | None, limit: int) -> Page:
        return self._tampered(WELCOMES, WELCOMES, self.honest.welcomes_after(cursor, limit))

    def _tampered(self, key: str, topic: str, page: Page) -> Page:
        earlier = self.delivered.setdefault(key, [])
        messages = list(page.messages)
        lie = next((lie for lie in self.lies if lie.topic == topic), None)
        if lie is not None and lie.apply(messages, earlier):
            self.lies.remove(lie)
            self.told.append(lie)
        earlier.extend(m for m in page.messages if m not in earlier)
        handed = {m.id for m in messages}
        self.left_out.update(m.id for m in page.messages if m.id not in handed)
        return Page(tuple(messages), page.has_more)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.honest, name)


@attrs.define
class LosingPushes:
    """A live subscription that loses the next ``lose`` application messages pushed to it (a connection
    that dropped them, or a server that skipped them), then delivers the rest as they come."""

    honest: Any
    lose: int = 1
    lost: list[str] = attrs.Factory(list)

    def pushed(self, timeout: float) -> ServerMessage | None:
        message = self.honest.pushed(timeout)
        if message is not None and self.lose > 0 and message.message_type == APPLICATION:
            self.lose -= 1
            self.lost.append(message.id)
            return None
        return message

    def __getattr__(self, name: str) -> Any:
        return getattr(self.honest, name)
