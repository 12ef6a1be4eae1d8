"""The wire format of ``tessera serve``: JSON text frames and their fields (the error codes are in :mod:`.codes`).

Both ends use this module: the server to read requests and build replies,
:mod:`protocols.libraries.delivery.client` to build requests and sign the challenge.
docs/server-protocol.md describes every frame with an example exchange.

A frame is a JSON object with a ``type``; a request may carry an ``id`` (a
string or an integer) that the reply repeats, so a client can keep several
requests in flight.  Binary data (payloads, KeyPackages) travels as standard
base64.  Fields a request does not use are ignored, so a newer client can
talk to an older server.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
from collections.abc import Mapping
from typing import Any, Final

from protocols.libraries.delivery.codes import ErrorCode

#: What a client signs to prove its installation key: this label, then the challenge's nonce bytes.
AUTH_LABEL: Final = b"tessera-serve-auth-v1\x00"
NONCE_BYTES: Final = 32

# --- frame types -----------------------------------------------------------------------------------

CHALLENGE: Final = "challenge"
HELLO: Final = "hello"
READY: Final = "ready"
MESSAGE: Final = "message"
ERROR: Final = "error"

#: Request type -> the type of its successful reply.
REPLY_TYPES: Final[Mapping[str, str]] = {
    "send": "sent",
    "history": "history_page",
    "ack": "acked",
    "read": "marked_read",
    "join": "joined",
    "leave": "left",
    "key_package_publish": "key_packages_published",
    "key_package_fetch": "key_package",
    "identity_publish": "identity_published",
    "identity_fetch": "identity",
    "welcomes": "welcome_page",
}

#: Every frame type a client may send.
REQUEST_TYPES: Final = frozenset({HELLO, *REPLY_TYPES})


class Direction(enum.StrEnum):
    """A ``history`` request's ``direction``: pages of older messages (the default) or of newer ones."""

    BACKWARD = "backward"
    FORWARD = "forward"


#: Close codes (RFC 6455 section 7.4.1) and why the server uses each.
CLOSE_GOING_AWAY: Final = 1001  # the server is shutting down
CLOSE_POLICY_VIOLATION: Final = 1008  # failed authentication, or a send queue the client did not drain


class RequestError(Exception):
    """A request the server refuses before it reaches the store; ``code`` is the wire error code."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


# --- encoding ---------------------------------------------------------------------------------------


def encode(frame: Mapping[str, Any]) -> str:
    """One frame as compact JSON text."""
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False)


def decode(text: str | bytes) -> dict[str, Any]:
    """The JSON object in a text frame; :class:`RequestError` (``malformed_json``) for anything else."""
    if isinstance(text, bytes):
        raise RequestError(ErrorCode.MALFORMED_JSON, "frames are JSON text; binary frames are not accepted")
    try:
        frame = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise RequestError(ErrorCode.MALFORMED_JSON, f"the frame is not JSON: {exc}") from None
    if not isinstance(frame, dict):
        raise RequestError(ErrorCode.MALFORMED_JSON, f"a frame is a JSON object, got {type(frame).__name__}")
    return frame


def error_frame(code: ErrorCode, message: str, request_id: object = None, **details: object) -> dict[str, Any]:
    """An ``error`` frame; ``request_id`` is the failed request's id (None when it could not be read)."""
    frame: dict[str, Any] = {"type": ERROR}
    if request_id is not None:
        frame["id"] = request_id
    return {**frame, "code": code, "message": message, **details}


def text_bytes(text: str) -> int:
    """The UTF-8 size of ``text``, without encoding it when its length alone decides."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def signed_message(nonce: bytes) -> bytes:
    """The bytes an installation signs to answer a challenge with ``nonce``."""
    return AUTH_LABEL + nonce


# --- reading request fields ---------------------------------------------------------------------------


def request_id(frame: Mapping[str, Any]) -> str | int | None:
    """The request's ``id`` (a string or an integer), or None; anything else is ``bad_field``."""
    value = frame.get("id")
    if value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise RequestError(ErrorCode.BAD_FIELD, f"id must be a string or an integer, got {type(value).__name__}")


def _required(frame: Mapping[str, Any], name: str) -> object:
    if name not in frame or frame[name] is None:
        kind = frame.get("type")
        what = f"a {kind} request" if isinstance(kind, str) and name != "type" else "every frame"
        raise RequestError(ErrorCode.MISSING_FIELD, f"{what} needs the field {name!r}")
    return frame[name]


def text(frame: Mapping[str, Any], name: str) -> str:
    """Field ``name``, a string."""
    value = _required(frame, name)
    if not isinstance(value, str):
        raise RequestError(ErrorCode.BAD_FIELD, f"{name} must be a string, got {type(value).__name__}")
    return value


def optional_text(frame: Mapping[str, Any], name: str) -> str | None:
    """Field ``name``, a string, or None when absent (or null)."""
    return None if frame.get(name) is None else text(frame, name)


def integer(frame: Mapping[str, Any], name: str, default: int) -> int:
    """Field ``name`` as an integer (``default`` when absent)."""
    value = frame.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(ErrorCode.BAD_FIELD, f"{name} must be an integer, got {type(value).__name__}")
    return value


def text_list(frame: Mapping[str, Any], name: str) -> list[str]:
    """Field ``name`` as a list of strings."""
    value = _required(frame, name)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RequestError(ErrorCode.BAD_FIELD, f"{name} must be a list of strings")
    return value


def base64_field(frame: Mapping[str, Any], name: str) -> bytes:
    """Field ``name`` decoded from standard base64."""
    return _unbase64(text(frame, name), name)


def base64_list(frame: Mapping[str, Any], name: str) -> list[bytes]:
    """Field ``name``: a list of standard base64 strings, decoded."""
    return [_unbase64(item, f"{name}[{index}]") for index, item in enumerate(text_list(frame, name))]


def _unbase64(value: str, name: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise RequestError(ErrorCode.BAD_FIELD, f"{name} must be standard base64") from None


def hex_field(frame: Mapping[str, Any], name: str, size: int) -> bytes:
    """Field ``name``: exactly ``size`` bytes in hex."""
    value = text(frame, name)
    try:
        data = bytes.fromhex(value)
    except ValueError:
        raise RequestError(ErrorCode.BAD_FIELD, f"{name} must be hex") from None
    if len(data) != size:
        raise RequestError(
            ErrorCode.BAD_FIELD, f"{name} must be {size} bytes ({2 * size} hex characters), got {len(data)}"
        )
    return data
