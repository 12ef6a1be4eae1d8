"""The example protocol's wire format: one signed JSON object per message.

``{"kind": "post"|"delete", "room": str, "author": hex32, "ts": ms, "body": str, "id": hex32, "sig": hex64}``

``id`` is the SHA-256 of the canonical JSON of ``[kind, room, author, ts, body]``
and ``sig`` the author's Ed25519 signature of the id.  For a delete, ``body``
is the hex id of the message it removes.
"""

from __future__ import annotations

import hashlib
import re

import nacl.exceptions
import nacl.signing

from core.encoding import dumps, loads_untrusted
from core.errors import DecodeError, MalformedInput

#: A message's ``kind``: the envelope type its handler is chosen by.
POST, DELETE = "post", "delete"
KINDS = (POST, DELETE)
MAX_BODY = 4000
_HEX = re.compile(r"^[0-9a-f]+$")
_FIELDS = {"kind", "room", "author", "ts", "body", "id", "sig"}


def message_id(kind: str, room: str, author: str, ts: int, body: str) -> str:
    return hashlib.sha256(dumps([kind, room, author, ts, body])).hexdigest()


def sign(kind: str, room: str, body: str, ts: int, key: nacl.signing.SigningKey) -> bytes:
    """A wire blob for ``kind`` signed by ``key``."""
    author = key.verify_key.encode().hex()
    mid = message_id(kind, room, author, ts, body)
    sig = key.sign(bytes.fromhex(mid)).signature.hex()
    return dumps({"kind": kind, "room": room, "author": author, "ts": ts, "body": body, "id": mid, "sig": sig})


def _hex(value: object, size: int, field: str, what: str = "") -> str:
    if not isinstance(value, str) or len(value) != size * 2 or not _HEX.match(value):
        raise MalformedInput(field, f"must be {size * 2} lowercase hex characters{what}")
    return value


def parse(blob: bytes) -> dict:
    """Parse and verify a wire blob.

    Raises MalformedInput naming the field for anything undecodable (wrong
    type, out of range, not JSON at all), and DecodeError for a message that
    decodes but is not what it claims (wrong id or signature).
    """
    try:
        message = loads_untrusted(blob)
    except MalformedInput as exc:
        if exc.field is None:
            raise MalformedInput(None, f"not a JSON object: {exc.detail}") from None
        raise
    if not isinstance(message, dict):
        raise MalformedInput(None, f"not a JSON object but a {type(message).__name__}")
    if set(message) != _FIELDS:
        wrong = sorted(_FIELDS.symmetric_difference(message))
        raise MalformedInput(wrong[0], f"expected exactly the fields {sorted(_FIELDS)}")
    _check_fields(message)
    expected = message_id(message["kind"], message["room"], message["author"], message["ts"], message["body"])
    if expected != message["id"]:
        raise DecodeError("id does not match the message content")
    try:
        nacl.signing.VerifyKey(bytes.fromhex(message["author"])).verify(
            bytes.fromhex(message["id"]), bytes.fromhex(message["sig"])
        )
    except (nacl.exceptions.BadSignatureError, ValueError):
        raise DecodeError("signature does not verify against the author key") from None
    return message


def _check_fields(message: dict) -> None:
    # Integers beyond 64 bits, lone surrogates and deep nesting were refused by loads_untrusted.
    if type(message["kind"]) is not str or message["kind"] not in KINDS:
        raise MalformedInput("kind", f"kind must be one of {KINDS}")
    room = message["room"]
    if not isinstance(room, str) or not 1 <= len(room) <= 64:
        raise MalformedInput("room", "room must be a string of 1-64 characters")
    ts = message["ts"]
    if type(ts) is not int or ts < 0:
        raise MalformedInput("ts", "ts must be a non-negative integer of milliseconds")
    body = message["body"]
    if not isinstance(body, str) or len(body) > MAX_BODY:
        raise MalformedInput("body", f"body must be a string of at most {MAX_BODY} characters")
    _hex(message["author"], 32, "author")
    _hex(message["id"], 32, "id")
    _hex(message["sig"], 64, "sig")
    if message["kind"] == DELETE:
        _hex(body, 32, "body", " (the id of the message to delete)")


def describe(blob: bytes) -> dict | None:
    """A blob as people read it (``tessera parked list --show``): the message's fields, whether or not its id
    and signature check out (a signed message holds no secret), or None when it is not a JSON object."""
    try:
        message = loads_untrusted(blob)
    except MalformedInput:
        return None
    return message if isinstance(message, dict) else None
