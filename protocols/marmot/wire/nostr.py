"""Nostr events (NIP-01) with BIP-340 Schnorr signatures, plus Marmot's kind-445 group events.

An event is a plain ``dict`` with exactly the keys ``id, pubkey, created_at,
kind, tags, content, sig``.  Its id is the SHA-256 of a canonical JSON array
``[0, pubkey, created_at, kind, tags, content]`` and its signature is a
BIP-340 signature of those 32 id bytes by the x-only ``pubkey``.

Typical inbound path, per item::

    event = parse_event(raw_bytes)   # JSON + strict shape + size limit
    verify_event(event)              # id and signature; no JSON re-parse
    gid = group_id_of(event)         # for kind 445 only

Everything raises :class:`~protocols.marmot.errors.InvalidEvent` (with a
``reason``) for bad events and :class:`~protocols.marmot.errors.InvalidKey`
for bad keys; both are ``core.errors.InvalidInput``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

import coincurve

from core import encoding
from core.encoding import locate_deep_nesting
from protocols.marmot.errors import InvalidEvent, InvalidKey
from protocols.marmot.wire.secp256k1 import check_secret_key, is_secret_scalar

__all__ = [
    "DEFAULT_MAX_BYTES",
    "GROUP_EVENT_KIND",
    "compute_event_id",
    "generate_secret_key",
    "group_id_of",
    "make_group_event",
    "parse_event",
    "public_key_xonly",
    "schnorr_sign",
    "schnorr_verify",
    "serialize_for_id",
    "sign_event",
    "verify_event",
]

DEFAULT_MAX_BYTES = 256 * 1024
GROUP_EVENT_KIND = 445
MAX_KIND = 65535
# Not a NIP-01 rule: keeps created_at in milliseconds (as Marmot records it) a signed
# 64-bit integer, storable in SQLite; about 292 million years from 1970.
MAX_CREATED_AT = (2**63 - 1) // 1000
# Containers nest three deep in a valid event: the object, its tags, one tag.
_MAX_NESTING = 3
# 19 digits hold every signed 64-bit integer; longer literals are not converted at all.
_MAX_INT_DIGITS = 20

EVENT_KEYS = ("id", "pubkey", "created_at", "kind", "tags", "content", "sig")
_EVENT_KEY_SET = frozenset(EVENT_KEYS)
_UNSIGNED_KEYS = ("created_at", "kind", "tags", "content")

_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX128 = re.compile(r"[0-9a-f]{128}")

# Python's encoder with these settings writes exactly NIP-01's canonical form:
# short escapes for " \ \n \r \t \b \f, \u00xx (lowercase) for other C0
# controls, and everything else (DEL, U+2028/9, '/', non-ASCII) verbatim.
# One shared instance avoids rebuilding an encoder on every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False, allow_nan=False)


# --- shape -------------------------------------------------------------------


def _shape_error(field: str | None, message: str) -> InvalidEvent:
    where = f"field {field}" if field is not None else "event"
    return InvalidEvent(f"malformed {where}: {message}", reason="shape", field=field)


def _check_text(value: str, field: str) -> None:
    """Refuse strings with lone surrogates: they have no UTF-8 form, hence no id."""
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _shape_error(field, f"{field} contains a lone UTF-16 surrogate (e.g. from a \\ud800 escape)") from None


def _check_hex(event: dict, field: str, pattern: re.Pattern, length: int) -> None:
    value = event[field]
    if type(value) is not str or pattern.fullmatch(value) is None:
        raise _shape_error(field, f"{field} must be {length} lowercase hex characters")


def _check_uint(event: dict, field: str, maximum: int) -> None:
    value = event[field]
    if type(value) is not int or not 0 <= value <= maximum:
        raise _shape_error(field, f"{field} must be an integer from 0 to {maximum}, got {value!r:.40}")


def _check_tags(tags: object) -> None:
    if type(tags) is not list:
        raise _shape_error("tags", "tags must be a list of lists of strings")
    for i, tag in enumerate(tags):
        if type(tag) is not list:
            raise _shape_error("tags", f"tags[{i}] must be a list of strings")
        for j, item in enumerate(tag):
            if type(item) is not str:
                raise _shape_error("tags", f"tags[{i}][{j}] must be a string")
            _check_text(item, "tags")


def _check_unsigned_fields(event: dict) -> None:
    """Check the fields that feed the id (all but id and sig; pubkey included)."""
    _check_hex(event, "pubkey", _HEX64, 64)
    _check_uint(event, "created_at", MAX_CREATED_AT)
    _check_uint(event, "kind", MAX_KIND)
    _check_tags(event["tags"])
    content = event["content"]
    if type(content) is not str:
        raise _shape_error("content", "content must be a string")
    _check_text(content, "content")


def _checked_keys(event: object, expected: frozenset[str]) -> dict[str, Any]:
    """``event`` itself, once it is known to be a dict with exactly the ``expected`` keys."""
    if type(event) is not dict:
        raise _shape_error(None, f"an event must be a JSON object, not {type(event).__name__}")
    if event.keys() != expected:
        missing = sorted(expected - event.keys())
        extra = sorted(map(str, event.keys() - expected))
        field = (missing or extra)[0]
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if extra:
            parts.append(f"unexpected {', '.join(extra)}")
        raise _shape_error(field, f"event keys are wrong: {'; '.join(parts)}")
    return event


def _check_shape(event: object) -> None:
    fields = _checked_keys(event, _EVENT_KEY_SET)
    _check_hex(fields, "id", _HEX64, 64)
    _check_hex(fields, "sig", _HEX128, 128)
    _check_unsigned_fields(fields)


def _check_size(size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise _shape_error(None, f"event is {size} bytes; the limit is {max_bytes}")


# --- parsing -----------------------------------------------------------------


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    # Parsers disagree on which duplicate wins, so two peers could "see"
    # different events behind one id.  Only objects call this hook, and a
    # valid event has exactly one, so it costs nothing measurable.
    result = dict(pairs)
    if len(result) != len(pairs):
        key = encoding.first_repeated_key(pairs)
        raise _shape_error(key, f"event has the key {key!r} more than once")
    return result


class _Unusable:
    """A literal no event field can hold (NaN, a huge integer), left unconverted; the shape check names its field."""

    __slots__ = ("description",)

    def __init__(self, description: str):
        self.description = description

    def __repr__(self) -> str:
        return self.description


def _parse_constant(name: str) -> _Unusable:
    return _Unusable(f"{name}, which is not valid JSON")


def _parse_int(text: str) -> int | _Unusable:
    # Converting thousands of digits is slow, and past 4300 Python refuses with a ValueError.
    if len(text) <= _MAX_INT_DIGITS:
        return int(text)
    return _Unusable(f"an integer of {len(text.lstrip('-'))} digits")


def _decode_raw(raw: str | bytes, max_bytes: int) -> str:
    """Return the raw event as text after the size check, requiring strict UTF-8."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        raw = bytes(raw)
        _check_size(len(raw), max_bytes)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _shape_error(None, "event is not valid UTF-8") from None
    # A character is 1..4 UTF-8 bytes, so short texts need no encoding to measure.
    if len(raw) * 4 > max_bytes:
        try:
            _check_size(len(raw.encode("utf-8")), max_bytes)
        except UnicodeEncodeError:
            raise _shape_error(None, "event text contains a lone surrogate") from None
    return raw


def parse_event(raw: str | bytes | dict, *, max_bytes: int = DEFAULT_MAX_BYTES) -> dict:
    """Parse and strictly shape-check one event; does not check its id or signature.

    ``raw`` may be JSON text, UTF-8 JSON bytes, or an already-decoded dict
    (checked and returned as is, not copied).  Duplicate keys, NaN/Infinity,
    lone surrogates and non-UTF-8 bytes are refused.  Size is the UTF-8
    length of the raw JSON; a dict has no raw form, so for it the size is
    the length of the canonical id serialization.  Raises
    InvalidEvent(reason="shape") naming the offending field in ``field``.
    """
    if isinstance(raw, dict):
        _check_shape(raw)
        _check_size(len(_serialize(raw)), max_bytes)
        return raw
    if not isinstance(raw, (str, bytes, bytearray, memoryview)):
        raise _shape_error(None, f"cannot parse an event from {type(raw).__name__}")
    text = _decode_raw(raw, max_bytes)
    try:
        event = json.loads(
            text, object_pairs_hook=_no_duplicate_keys, parse_constant=_parse_constant, parse_int=_parse_int
        )
    except InvalidEvent:
        raise
    except RecursionError:
        field = locate_deep_nesting(text, _MAX_NESTING)
        raise _shape_error(field, f"{field or 'event'} nests far deeper than an event can") from None
    except ValueError as exc:
        raise _shape_error(None, f"event is not valid JSON: {exc}") from None
    _check_shape(event)
    return event


# --- ids -------------------------------------------------------------------------


def _serialize(event: dict) -> bytes:
    """Canonical id serialization of an event whose shape is already known to be good."""
    array = [0, event["pubkey"], event["created_at"], event["kind"], event["tags"], event["content"]]
    return _ENCODER.encode(array).encode("utf-8")


def serialize_for_id(event: dict) -> bytes:
    """Return the UTF-8 bytes whose SHA-256 is the event id (NIP-01 canonical form).

    Needs pubkey, created_at, kind, tags and content (id and sig are ignored,
    so an unsigned event works); those fields are shape-checked first.
    """
    _check_for_id(event)
    return _serialize(event)


def compute_event_id(event: dict) -> str:
    """Return the event id (lowercase hex SHA-256 of :func:`serialize_for_id`)."""
    return hashlib.sha256(serialize_for_id(event)).hexdigest()


def _check_for_id(event: object) -> None:
    if type(event) is not dict:
        raise _shape_error(None, f"an event must be a dict, not {type(event).__name__}")
    missing = [k for k in ("pubkey", *_UNSIGNED_KEYS) if k not in event]
    if missing:
        raise _shape_error(missing[0], f"event is missing {', '.join(missing)}")
    _check_unsigned_fields(event)


# --- signatures -------------------------------------------------------------------


#: A signature checked ahead of the writer (a prepare stage's worker): the event's ``(id, pubkey, sig)``.
Verified = tuple[str, str, str]


def verify_event(event: dict, *, max_bytes: int = DEFAULT_MAX_BYTES, verified: Verified | None = None) -> None:
    """Check shape, id and BIP-340 signature of an event; return None or raise InvalidEvent.

    The id is recomputed from the dict (reason "id_mismatch" if it differs),
    then the signature over the id bytes is checked against ``pubkey``
    (reason "bad_signature", also for a pubkey that is not a curve point).
    ``max_bytes`` bounds the canonical serialization, which is built anyway.
    ``verified``: a signature a worker checked ahead (protocols/marmot/transport/prepared.py); taken only
    when it is this event's very ``(id, pubkey, sig)``, and only after the id was recomputed from the
    content, so a signature vouched for covers exactly the content it was checked over.
    """
    _check_shape(event)
    serialized = _serialize(event)
    _check_size(len(serialized), max_bytes)
    digest = hashlib.sha256(serialized).digest()
    expected_id = digest.hex()
    if expected_id != event["id"]:
        raise InvalidEvent(
            f"event id {event['id']} does not match its content (expected {expected_id}); "
            "the event was altered or serialized wrongly",
            reason="id_mismatch",
            field="id",
        )
    if verified is not None and verified == (event["id"], event["pubkey"], event["sig"]):
        return  # the id was recomputed above: this exact signature of this content verified in a worker
    if not schnorr_verify(bytes.fromhex(event["pubkey"]), bytes.fromhex(event["sig"]), digest):
        raise InvalidEvent(
            f"signature of event {event['id']} does not verify for pubkey {event['pubkey']}",
            reason="bad_signature",
            field="sig",
        )


def schnorr_verify(public_key: bytes, signature: bytes, message: bytes) -> bool:
    """BIP-340 verify ``signature`` (64 bytes) of ``message`` by x-only ``public_key`` (32 bytes).

    Returns False, never raises, for anything that is not a valid signature,
    including a public key that is not on the curve or has the wrong length.
    """
    # coincurve hands the key buffer to C, which reads 32 bytes regardless.
    if len(public_key) != 32 or len(signature) != 64:
        return False
    try:
        return coincurve.PublicKeyXOnly(bytes(public_key)).verify(bytes(signature), message)
    except Exception:
        return False


def schnorr_sign(secret_key: bytes, digest: bytes, aux_rand: bytes | None = None) -> bytes:
    """BIP-340 sign a 32-byte ``digest``; fresh randomness when ``aux_rand`` is None."""
    private_key = coincurve.PrivateKey(check_secret_key(secret_key))
    return _sign_with(private_key, digest, aux_rand)


def _sign_with(private_key: coincurve.PrivateKey, digest: bytes, aux_rand: bytes | None) -> bytes:
    if aux_rand is None:
        aux_rand = os.urandom(32)
    elif not isinstance(aux_rand, (bytes, bytearray)) or len(aux_rand) != 32:
        raise InvalidKey("aux_rand must be exactly 32 bytes", reason="bad_aux_rand")
    if len(digest) != 32:
        # coincurve signs only 32-byte messages; NIP-01 only ever signs ids.
        raise InvalidEvent("only 32-byte digests can be signed", reason="shape")
    return private_key.sign_schnorr(bytes(digest), bytes(aux_rand))


def generate_secret_key(draw: Callable[[int], bytes] = os.urandom) -> bytes:
    """Return a uniformly random secp256k1 secret key (32 bytes) drawn from ``draw``.

    ``draw`` defaults to the OS's randomness; a seeded one makes the key reproducible.
    """
    while True:
        candidate = draw(32)
        # Retrying is needed with probability ~2**-128; kept for exactness.
        if is_secret_scalar(candidate):
            return candidate


def public_key_xonly(secret_key: bytes) -> bytes:
    """Return the 32-byte BIP-340 x-only public key of ``secret_key``; raise InvalidKey if invalid."""
    secret = check_secret_key(secret_key)
    return coincurve.PublicKeyXOnly.from_valid_secret(secret).format()


def sign_event(event: dict, secret_key: bytes, *, aux_rand: bytes | None = None) -> dict:
    """Return a new, signed copy of ``event`` with pubkey, id and sig filled in.

    ``event`` needs created_at, kind, tags and content; any id, pubkey or sig
    it carries is replaced, other keys are refused.  ``aux_rand`` (32 bytes)
    makes the signature reproducible; leave it None in production so fresh
    randomness is used, as BIP-340 recommends.
    """
    if type(event) is not dict:
        raise _shape_error(None, f"an event must be a dict, not {type(event).__name__}")
    extra = sorted(map(str, event.keys() - _EVENT_KEY_SET))
    if extra:
        raise _shape_error(extra[0], f"cannot sign an event with unexpected keys: {', '.join(extra)}")
    missing = [k for k in _UNSIGNED_KEYS if k not in event]
    if missing:
        raise _shape_error(missing[0], f"cannot sign an event without {', '.join(missing)}")
    # One PrivateKey serves both the pubkey and the signature (each derivation is a point multiply).
    private_key = coincurve.PrivateKey(check_secret_key(secret_key))
    pubkey = private_key.public_key.format(compressed=True)[1:].hex()
    unsigned = {"pubkey": pubkey, **{k: event[k] for k in _UNSIGNED_KEYS}}
    _check_for_id(unsigned)
    unsigned["tags"] = [list(tag) for tag in unsigned["tags"]]  # detach from the caller's lists
    digest = hashlib.sha256(_serialize(unsigned)).digest()
    sig = _sign_with(private_key, digest, aux_rand)
    return {
        "id": digest.hex(),
        "pubkey": pubkey,
        "created_at": unsigned["created_at"],
        "kind": unsigned["kind"],
        "tags": unsigned["tags"],
        "content": unsigned["content"],
        "sig": sig.hex(),
    }


# --- Marmot group events (kind 445) ----------------------------------------------------


def _not_group(message: str) -> InvalidEvent:
    return InvalidEvent(message, reason="not_group_event", field="tags")


def group_id_of(event: dict) -> str:
    """Return the Nostr group id (64 lowercase hex) from the single ``h`` tag of a kind-445 event.

    Extra elements after the value in the ``h`` tag are tolerated and ignored.
    Raises InvalidEvent(reason="not_group_event") otherwise.
    """
    kind = event.get("kind") if isinstance(event, dict) else None
    if kind != GROUP_EVENT_KIND or type(kind) is not int:
        raise InvalidEvent(
            f"event kind is {kind!r}, not the group-message kind {GROUP_EVENT_KIND}",
            reason="not_group_event",
            field="kind",
        )
    tags = event.get("tags")
    h_tags = [t for t in tags if type(t) is list and t and t[0] == "h"] if type(tags) is list else []
    if len(h_tags) != 1:
        raise _not_group(f"a group event needs exactly one h tag, found {len(h_tags)}")
    tag = h_tags[0]
    value = tag[1] if len(tag) > 1 else None
    if type(value) is not str or _HEX64.fullmatch(value) is None:
        raise _not_group("the h tag value must be a 64-character lowercase hex group id")
    return value


def make_group_event(
    content: str,
    nostr_group_id_hex: str,
    created_at: int,
    *,
    secret_key: bytes | None = None,
    extra_tags: Iterable[list[str] | tuple[str, ...]] = (),
    aux_rand: bytes | None = None,
) -> tuple[dict, bytes]:
    """Build and sign a kind-445 group event; return ``(event, signing_secret_key)``.

    Without ``secret_key`` a fresh ephemeral key is generated for every call,
    so group messages cannot be linked to a member's long-term identity.
    ``content`` is normally a group-event envelope (:mod:`.envelope`).  ``extra_tags`` may not contain
    another ``h`` tag.  ``aux_rand`` (32 bytes) makes the signature
    reproducible, for seeded simulations; leave it None otherwise.
    """
    if type(nostr_group_id_hex) is not str or _HEX64.fullmatch(nostr_group_id_hex) is None:
        raise _not_group("nostr_group_id_hex must be 64 lowercase hex characters")
    given = list(extra_tags)
    # list("ab") would silently become ["a", "b"]; insist on real tag sequences.
    if not all(isinstance(tag, (list, tuple)) for tag in given):
        raise _shape_error("tags", "extra_tags must be a sequence of lists of strings")
    extra = [list(tag) for tag in given]
    if any(tag and tag[0] == "h" for tag in extra):
        raise _not_group("extra_tags must not contain an h tag; the group id tag is added for you")
    key = generate_secret_key() if secret_key is None else check_secret_key(secret_key)
    unsigned = {
        "created_at": created_at,
        "kind": GROUP_EVENT_KIND,
        "tags": [["h", nostr_group_id_hex], *extra],
        "content": content,
    }
    return sign_event(unsigned, key, aux_rand=aux_rand), key


def arrival_order(blob: bytes) -> tuple[int, str]:
    """Where a relay line goes among those delivered with it: MIP-03 order, ``(created_at, id)``.

    Only a sort key: nothing is checked here (the decoder checks everything later), and a line that is
    not an event object sorts first.
    """
    try:
        event = json.loads(blob)
        created_at, event_id = event["created_at"], event["id"]
    except (ValueError, TypeError, KeyError):
        return (-1, "")
    if not isinstance(created_at, int) or not isinstance(event_id, str):
        return (-1, "")
    return (created_at, event_id)
