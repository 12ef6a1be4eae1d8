"""KeyPackage events: kind 30443 (current, addressable) and kind 443 (legacy, read and optionally written).

A KeyPackage event carries one MLS KeyPackage in its content and advertises,
in tags, what the KeyPackage supports, so others can choose one to invite its
author with.  We write exactly what MDK 0.8.0 writes and accepts:

* content: base64 of the *bare* TLS-encoded KeyPackage (not an MLSMessage;
  MDK refuses the MLSMessage form, although the newer transport text asks for it);
* tags, in this order: ``d`` (kind 30443 only; 64 hex), ``mls_protocol_version``
  ``1.0``, ``mls_ciphersuite`` ``0x0001``, ``mls_extensions`` (the non-default
  extension types of the leaf's capabilities), ``mls_proposals`` ``0x000a``,
  ``relays``, ``i`` (the KeyPackageRef), ``client``, ``encoding`` ``base64``.

MDK insists that ``mls_extensions`` lists ``0x000a`` (last_resort) and
``0xf2ee`` (Marmot group data), and that ``mls_proposals`` is exactly
``0x000a`` (SelfRemove).  It reads that tag as an advertisement only: which
proposals a group requires comes from the invitees' KeyPackage capabilities
(ours list SelfRemove there too, so MDK's groups that require it can add us).  The event is unsigned here; the author signs it with
:func:`~protocols.marmot.wire.nostr.sign_event`.

Reading accepts both kinds, base64 or hex content (hex when the ``encoding``
tag says so or, as MIP-00 had it, when the tag is absent), and a bare or an
MLSMessage-wrapped KeyPackage; it verifies the event, the KeyPackage, the
``i`` reference, the credential against the author, and the version and
cipher suite tags against the content.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import re
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from attrs import frozen

from core import distribution
from core.errors import InvalidInput
from protocols.libraries import mls
from protocols.libraries.mls import credential_string, key_package_from_bytes
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.errors import InvalidMessage
from protocols.libraries.mls.group.key_packages import key_package_ref, validate_key_package
from protocols.libraries.mls.messages import KeyPackage
from protocols.libraries.mls.messages.registries import GREASE_VALUES, LAST_RESORT_EXTENSION_TYPE
from protocols.libraries.mls.tree.validation import DEFAULT_EXTENSIONS
from protocols.marmot.errors import MarmotError
from protocols.marmot.wire import nostr

__all__ = [
    "CLIENT",
    "KEY_PACKAGE_KIND",
    "LEGACY_KEY_PACKAGE_KIND",
    "MARMOT_EXTENSIONS",
    "InvalidKeyPackageEvent",
    "KeyPackageEvent",
    "advertised_extensions",
    "check_relay_url",
    "check_relays",
    "create_key_package",
    "decode_content",
    "key_package_event",
    "parse_key_package_event",
    "single_tag",
    "tags_named",
]

KEY_PACKAGE_KIND = 30443
LEGACY_KEY_PACKAGE_KIND = 443
PROTOCOL_VERSION_TAG = "1.0"
GROUP_DATA_EXTENSION = 0xF2EE
SELF_REMOVE_PROPOSAL = 0x000A
#: What MIP-00 (and MDK) require ``mls_extensions`` to list: last_resort and the Marmot group data.
MARMOT_EXTENSIONS = (LAST_RESORT_EXTENSION_TYPE, GROUP_DATA_EXTENSION)
MAX_RELAY_URL_BYTES = 512


def create_key_package(
    identity: mls.Identity, *, last_resort: bool = False, now: int | None = None, rng: mls.Rng | None = None
) -> tuple[mls.KeyPackage, mls.KeyPackagePrivate]:
    """A KeyPackage that can join Marmot groups.

    It supports the group data extension and ``last_resort`` (0x000a), as
    MDK requires of every KeyPackage event; ``last_resort`` marks it as one
    that may be used more than once.
    """
    return mls.create_key_package(
        identity, supported_extensions=MARMOT_EXTENSIONS, last_resort=last_resort, now=now, rng=rng
    )


def _client_name() -> str:
    version = distribution.installed_version()
    return "tessera" if version is None else f"tessera/{version}"


CLIENT = _client_name()

_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")
_ID_TAG = re.compile(r"0x[0-9a-f]{4}")


class InvalidKeyPackageEvent(MarmotError, InvalidInput):
    """A KeyPackage event (or the KeyPackage for one) was refused; ``field`` names the tag or field at fault."""

    def __init__(self, message: str, *, field: str):
        self.field = field
        super().__init__(message)


# --- tags (shared with the welcome rumors) ----------------------------------------------


def tags_named(tags: Sequence[Sequence[str]], name: str) -> list[Sequence[str]]:
    """Every tag whose first element is ``name``."""
    return [tag for tag in tags if tag and tag[0] == name]


def single_tag(tags: Sequence[Sequence[str]], name: str, error: Callable[[str, str], Exception]) -> list[str] | None:
    """The values of the one tag named ``name`` (``None`` when absent); ``error(message, name)`` when repeated."""
    found = tags_named(tags, name)
    if len(found) > 1:
        raise error(f"the event has {len(found)} {name} tags; it must have at most one", name)
    return list(found[0][1:]) if found else None


def check_relay_url(url: str, error: Callable[[str, str], Exception]) -> str:
    """``url`` when it fits the Nostr relay URL profile (ws/wss, a host, no credentials or fragment)."""
    if len(url.encode("utf-8", "replace")) > MAX_RELAY_URL_BYTES:
        raise error(f"relay URL {url[:40]!r}... is over {MAX_RELAY_URL_BYTES} bytes", "relays")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading the port validates it
    except ValueError:
        raise error(f"relay URL {url!r} is not a valid URL", "relays") from None
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise error(f"relay URL {url!r} must be ws:// or wss:// with a host", "relays")
    if parts.username is not None or parts.fragment:
        raise error(f"relay URL {url!r} must not carry credentials or a fragment", "relays")
    return url


def check_relays(relays: Sequence[str], error: Callable[[str, str], Exception]) -> tuple[str, ...]:
    """``relays`` as a tuple, once it is non-empty and every URL fits the relay URL profile."""
    if isinstance(relays, str) or not relays:
        raise error("give at least one relay URL (a list of ws:// or wss:// URLs)", "relays")
    return tuple(check_relay_url(url, error) for url in relays)


def _error(message: str, field: str) -> InvalidKeyPackageEvent:
    return InvalidKeyPackageEvent(message, field=field)


def _id_list(types: Sequence[int]) -> list[str]:
    return [f"0x{t:04x}" for t in sorted(set(types))]


# --- building ---------------------------------------------------------------------


def advertised_extensions(key_package: KeyPackage) -> list[int]:
    """The non-default, non-GREASE extension types the KeyPackage's leaf supports, ascending."""
    listed = key_package.leaf_node.capabilities.extensions
    return sorted({int(t) for t in listed if t not in DEFAULT_EXTENSIONS and t not in GREASE_VALUES})


def _check_buildable(key_package: KeyPackage, slot: str | None) -> list[int]:
    extensions = advertised_extensions(key_package)
    missing = [f"0x{t:04x}" for t in MARMOT_EXTENSIONS if t not in extensions]
    if missing:
        raise _error(
            f"the KeyPackage's capabilities do not list {', '.join(missing)}, which MIP-00 (and MDK) require; "
            "create it with supported_extensions=MARMOT_EXTENSIONS",
            "mls_extensions",
        )
    if slot is not None and not _HEX64.fullmatch(slot):
        raise _error("the d tag (slot) must be 64 lowercase hex characters; MDK refuses anything else", "d")
    return extensions


def key_package_event(
    key_package: KeyPackage,
    relays: Sequence[str],
    *,
    created_at: int,
    legacy: bool = False,
    slot: str | None = None,
    client: str | None = CLIENT,
    rng: Callable[[int], bytes] = os.urandom,
) -> dict:
    """The unsigned KeyPackage event (``created_at, kind, tags, content``) for ``key_package``; sign it to publish.

    Kind 30443 with a ``d`` tag (``slot``, default 32 random bytes from ``rng``
    as hex), or kind 443 without one when ``legacy``.  ``client=None`` leaves
    the ``client`` tag out.  The KeyPackage must list last_resort and the
    Marmot group data extension in its capabilities.
    """
    extensions = _check_buildable(key_package, slot)
    relay_list = check_relays(relays, _error)
    ref = key_package_ref(suite(int(key_package.cipher_suite)), key_package)
    tags = [] if legacy else [["d", slot or rng(32).hex()]]
    tags += [
        ["mls_protocol_version", PROTOCOL_VERSION_TAG],
        ["mls_ciphersuite", f"0x{int(key_package.cipher_suite):04x}"],
        ["mls_extensions", *_id_list(extensions)],
        ["mls_proposals", *_id_list((SELF_REMOVE_PROPOSAL,))],
        ["relays", *relay_list],
        ["i", ref.hex()],
    ]
    tags += [] if client is None else [["client", client]]
    tags.append(["encoding", "base64"])
    kind = LEGACY_KEY_PACKAGE_KIND if legacy else KEY_PACKAGE_KIND
    return {
        "created_at": created_at,
        "kind": kind,
        "tags": tags,
        "content": base64.b64encode(encode(key_package)).decode(),
    }


# --- parsing ----------------------------------------------------------------------


@frozen
class KeyPackageEvent:
    """A verified KeyPackage event.

    Attributes:
        key_package: the KeyPackage, verified (signatures, capabilities, ``now`` within its lifetime if given).
        event_id: the event's id (a welcome's ``e`` tag names it).
        author: the event's pubkey, which is the KeyPackage credential's identity.
        kind: 30443 or 443.
        created_at: the event's timestamp.
        slot: the ``d`` tag (kind 30443), else ``None``.
        relays: the ``relays`` tag's URLs (may be empty).
        ref: the KeyPackageRef (RFC 9420 section 5.2).
        client: the ``client`` tag, if any.
    """

    key_package: KeyPackage
    event_id: str
    author: str
    kind: int
    created_at: int
    slot: str | None
    relays: tuple[str, ...]
    ref: bytes
    client: str | None


def parse_key_package_event(event: dict | str | bytes, *, now: int | None = None) -> KeyPackageEvent:
    """Verify a signed kind-30443 or kind-443 event and return its KeyPackage with what the tags say.

    Raises :class:`~protocols.marmot.errors.InvalidEvent` for a malformed or
    wrongly signed event, and :class:`InvalidKeyPackageEvent` (``field``
    naming the culprit) for everything about the KeyPackage and its tags.
    """
    checked = nostr.parse_event(event)
    nostr.verify_event(checked)
    kind, tags = checked["kind"], checked["tags"]
    if kind not in (KEY_PACKAGE_KIND, LEGACY_KEY_PACKAGE_KIND):
        raise _error(f"kind {kind} is not a KeyPackage event ({KEY_PACKAGE_KIND} or {LEGACY_KEY_PACKAGE_KIND})", "kind")
    slot = _slot(tags, kind)
    key_package = _key_package(checked["content"], single_tag(tags, "encoding", _error))
    _validate(key_package, now)
    ref = key_package_ref(suite(int(key_package.cipher_suite)), key_package)
    _check_tags_agree(tags, key_package, ref)
    _check_author(key_package, checked["pubkey"])
    relays = single_tag(tags, "relays", _error) or []
    client = single_tag(tags, "client", _error)
    return KeyPackageEvent(
        key_package,
        checked["id"],
        checked["pubkey"],
        kind,
        checked["created_at"],
        slot,
        tuple(check_relay_url(url, _error) for url in relays),
        ref,
        client[0] if client else None,
    )


def _slot(tags: list, kind: int) -> str | None:
    d = single_tag(tags, "d", _error)
    if kind == LEGACY_KEY_PACKAGE_KIND:
        return d[0] if d else None
    if not d or not d[0]:
        raise _error("a kind-30443 KeyPackage event needs a non-empty d tag (its slot)", "d")
    return d[0]


def decode_content(content: str, encoding: list[str] | None, error: Callable[[str, str], Exception]) -> list[bytes]:
    """The byte strings ``content`` may stand for: one per encoding the ``encoding`` tag allows.

    ``base64`` and ``hex`` give one; an absent tag means hex in MIP-00/MIP-02
    but base64 in the newer transport text, so both decodings that succeed
    are returned, hex first, for the caller to try.
    """
    name = encoding[0] if encoding else None
    if name not in (None, "base64", "hex"):
        raise error(f"encoding {name!r} is not supported; use base64 (or hex, deprecated)", "encoding")
    candidates = []
    if name in (None, "hex") and _HEX.fullmatch(content):
        candidates.append(bytes.fromhex(content))
    if name in (None, "base64"):
        with contextlib.suppress(binascii.Error, ValueError):
            candidates.append(base64.b64decode(content, validate=True))
    if not candidates:
        raise error(f"the content is not valid {name or 'hex or base64'}", "content")
    return candidates


def _key_package(content: str, encoding: list[str] | None) -> KeyPackage:
    for data in decode_content(content, encoding, _error):
        try:
            return decode(KeyPackage, data)
        except InvalidMessage:
            pass
        try:
            return key_package_from_bytes(data, verify=False)
        except InvalidMessage:
            pass
    raise _error("the content is neither a KeyPackage nor an MLSMessage holding one", "content")


def _validate(key_package: KeyPackage, now: int | None) -> None:
    try:
        validate_key_package(key_package, now=now)
    except InvalidMessage as exc:
        raise _error(f"the KeyPackage is invalid: {exc}", "content") from exc


def _check_tags_agree(tags: list, key_package: KeyPackage, ref: bytes) -> None:
    version = single_tag(tags, "mls_protocol_version", _error)
    if version is not None and version[:1] != [PROTOCOL_VERSION_TAG]:
        raise _error(f"mls_protocol_version is {version[:1]}, expected ['1.0']", "mls_protocol_version")
    _check_cipher_suite(single_tag(tags, "mls_ciphersuite", _error), int(key_package.cipher_suite))
    for name in ("mls_extensions", "mls_proposals"):
        values = single_tag(tags, name, _error) or []
        if not all(_ID_TAG.fullmatch(value) for value in values):
            raise _error(f"{name} values must be 0x-prefixed lowercase 4-digit hex ids, got {values}", name)
    i = single_tag(tags, "i", _error)
    if i is not None and i[:1] != [ref.hex()]:
        raise _error(f"the i tag {i[:1]} is not the KeyPackageRef {ref.hex()} of the content", "i")


def _check_cipher_suite(tag: list[str] | None, cipher_suite: int) -> None:
    if tag is None:
        return
    if len(tag) != 1 or not _ID_TAG.fullmatch(tag[0]):
        raise _error(f"mls_ciphersuite must be one id like 0x0001, got {tag}", "mls_ciphersuite")
    if int(tag[0], 16) != cipher_suite:
        raise _error(f"mls_ciphersuite says {tag[0]} but the KeyPackage is for 0x{cipher_suite:04x}", "mls_ciphersuite")


def _check_author(key_package: KeyPackage, author: str) -> None:
    try:
        identity = credential_string(key_package.leaf_node.credential)
    except InvalidMessage as exc:
        raise _error(f"the KeyPackage's credential is unusable: {exc}", "content") from exc
    if identity != author:
        raise _error(
            f"the KeyPackage's credential is {identity[:16]}..., not the event's author {author[:16]}...; "
            "a KeyPackage event must be signed by the key its credential names",
            "pubkey",
        )
