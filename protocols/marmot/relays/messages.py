"""NIP-01 framing: the three messages a client sends, and every message a relay may send, parsed leniently.

Relays are untrusted and often slightly off-spec, so parsing never raises on
a message it can make sense of: an ``OK`` without its message string, or with
an empty id, is still an ``OK``.  Anything else becomes :class:`Unreadable`
(kept with its text so the observer can show it), never an exception.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from typing import Any

import attrs

from protocols.marmot.relays.filters import Filter


class MessageType(enum.StrEnum):
    """A NIP-01 message's first element: what a client sends (EVENT, REQ, CLOSE) and what a relay sends."""

    EVENT = "EVENT"
    REQ = "REQ"
    CLOSE = "CLOSE"
    OK = "OK"
    EOSE = "EOSE"
    CLOSED = "CLOSED"
    NOTICE = "NOTICE"
    AUTH = "AUTH"  # NIP-42


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode(message: object) -> str:
    """Compact JSON text of a message or event (non-ASCII kept as is, as relays expect)."""
    return _ENCODER.encode(message)


def event_message(event: dict[str, Any]) -> str:
    """``["EVENT", event]``."""
    return encode([MessageType.EVENT, event])


def req_message(subscription_id: str, filters: Sequence[Filter]) -> str:
    """``["REQ", subscription_id, filter, ...]``."""
    return encode([MessageType.REQ, subscription_id, *(one.to_wire() for one in filters)])


def close_message(subscription_id: str) -> str:
    """``["CLOSE", subscription_id]``."""
    return encode([MessageType.CLOSE, subscription_id])


@attrs.frozen
class EventArrived:
    """``["EVENT", subscription_id, event]``; ``event`` is unchecked JSON until the client verifies it."""

    subscription_id: str
    event: object


@attrs.frozen
class Ok:
    """``["OK", event_id, accepted, message]``; ``event_id`` may be empty (some relays send that)."""

    event_id: str
    accepted: bool
    message: str


@attrs.frozen
class EndOfStored:
    """``["EOSE", subscription_id]``: stored events are all sent, live ones follow."""

    subscription_id: str


@attrs.frozen
class Closed:
    """``["CLOSED", subscription_id, message]``: the relay ended (or refused) a subscription."""

    subscription_id: str
    message: str


@attrs.frozen
class Notice:
    """``["NOTICE", message]``: free text from the relay."""

    message: str


@attrs.frozen
class AuthChallenge:
    """``["AUTH", challenge]`` (NIP-42); this transport does not authenticate, it only reports it."""

    challenge: str


@attrs.frozen
class Unreadable:
    """A frame that is not a relay message this transport understands; ``text`` is its start."""

    text: str
    problem: str


RelayMessage = EventArrived | Ok | EndOfStored | Closed | Notice | AuthChallenge | Unreadable

_SHOWN_CHARS = 200


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _from_array(frame: list[Any]) -> RelayMessage | None:
    """The message an array frame holds, or None when its type or arity is not one we know."""
    kind, args = frame[0], frame[1:]
    if kind == MessageType.EVENT and len(args) >= 2 and isinstance(args[0], str):
        return EventArrived(args[0], args[1])
    if kind == MessageType.OK and len(args) >= 2 and isinstance(args[1], bool):
        return Ok(_text(args[0]), args[1], _text(args[2]) if len(args) > 2 else "")
    if kind == MessageType.EOSE and args and isinstance(args[0], str):
        return EndOfStored(args[0])
    if kind == MessageType.CLOSED and args and isinstance(args[0], str):
        return Closed(args[0], _text(args[1]) if len(args) > 1 else "")
    if kind == MessageType.NOTICE:
        return Notice(_text(args[0]) if args else "")
    if kind == MessageType.AUTH and args:
        return AuthChallenge(_text(args[0]))
    return None


def parse_relay_message(text: str | bytes) -> RelayMessage:
    """Read one frame from a relay; never raises (see :class:`Unreadable`)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError):
        return Unreadable(text[:_SHOWN_CHARS], "not JSON")
    if not isinstance(frame, list) or not frame or not isinstance(frame[0], str):
        return Unreadable(text[:_SHOWN_CHARS], "not a JSON array starting with a message type")
    message = _from_array(frame)
    if message is None:
        return Unreadable(text[:_SHOWN_CHARS], f"unknown or malformed {frame[0]!r:.20} message")
    return message
