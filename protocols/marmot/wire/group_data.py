"""The Marmot group data extension (GroupContext extension ``0xF2EE``): its model, byte layouts and place in a group.

Every Marmot group carries one ``marmot_group_data`` extension in its
GroupContext.  It names the group on relays (``nostr_group_id``, the value
of every group event's ``h`` tag, distinct from the private MLS group id),
its admins, its relays and its profile.  Fields are RFC 9420 variable-length
vectors after a ``uint16`` version and the fixed 32-byte ``nostr_group_id``.

Three byte layouts exist in the wild; all decode, the current one is written:

================ ====================================== ===========================
layout           admin keys                             image fields
================ ====================================== ===========================
current (v2)     raw 32-byte keys, a vector of ``[32]`` hash, key, nonce, upload key
v2, hex admins   64-character hex strings, ``<V><V>``   hash, key, nonce, upload key
v1               64-character hex strings, ``<V><V>``   hash, key, nonce
================ ====================================== ===========================

The reference implementation switched its admin keys from hex strings to
raw bytes in February 2026 without changing the version number, so the
version alone does not tell the layouts apart: the decoder tries each in
turn and keeps the one that consumes every byte.  Image fields are empty
vectors when the group has no image.  (MIP-01's text draws the lengths as
``uint16`` and the image fields as fixed arrays; no shipped client wrote
that form, so it is not accepted.)

Every member must support the extension (a Marmot group's
``required_capabilities`` name it), and every change to it is a
GroupContextExtensions commit, so all members agree on who the admins are,
and which ``nostr_group_id`` the group uses on relays, at each epoch:
:func:`read` gives it for an engine state, :func:`create_group` makes a
group that carries it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated

import attrs
from attrs import frozen

from core.errors import InvalidInput
from protocols.libraries import mls
from protocols.libraries.mls.codec import DecodeError, Fixed, Opaque, Uint16, decode, encode
from protocols.libraries.mls.messages import Extension, ExtensionType, RequiredCapabilities
from protocols.libraries.mls.messages.registries import SELF_REMOVE_PROPOSAL_TYPE

GROUP_DATA_EXTENSION = 0xF2EE
CURRENT_VERSION = 2
NOSTR_GROUP_ID_SIZE = 32
IMAGE_FIELD_SIZES = {"image_hash": 32, "image_key": 32, "image_nonce": 12, "image_upload_key": 32}

Key32 = Annotated[bytes, Fixed(32)]
_HEX_KEY = re.compile(rb"[0-9a-f]{64}")
_RELAY_URL = re.compile(r"wss?://[^\s/?#]+(:\d+)?(/[^\s]*)?", re.IGNORECASE)


class InvalidGroupData(InvalidInput):
    """A group's 0xF2EE extension is missing, does not decode, or holds a bad value."""


@frozen
class GroupData:
    """What a Marmot group says about itself.

    Attributes:
        nostr_group_id: the 32-byte id in every group event's ``h`` tag.
        name: the group's name (UTF-8).
        description: the group's description (UTF-8).
        admins: the admins' Nostr public keys, lowercase hex, sorted.
        relays: the relay URLs the group publishes to, sorted.
        image_hash, image_key, image_nonce, image_upload_key: the encrypted
            group image (MIP-01), or None when the group has none.
        version: the layout version it was read with (written: 2).
    """

    nostr_group_id: bytes
    name: str = ""
    description: str = ""
    admins: tuple[str, ...] = attrs.field(default=(), converter=lambda keys: tuple(sorted(set(keys))))
    relays: tuple[str, ...] = attrs.field(default=(), converter=lambda urls: tuple(sorted(set(urls))))
    image_hash: bytes | None = None
    image_key: bytes | None = None
    image_nonce: bytes | None = None
    image_upload_key: bytes | None = None
    version: int = CURRENT_VERSION

    def __attrs_post_init__(self) -> None:
        if len(self.nostr_group_id) != NOSTR_GROUP_ID_SIZE:
            raise InvalidGroupData(f"nostr_group_id must be 32 bytes, not {len(self.nostr_group_id)}")
        for admin in self.admins:
            if _HEX_KEY.fullmatch(admin.encode()) is None:
                raise InvalidGroupData(f"admin {admin!r} is not a 64-character lowercase hex public key")
        for url in self.relays:
            if _RELAY_URL.fullmatch(url) is None:
                raise InvalidGroupData(f"relay {url!r} is not a ws:// or wss:// URL")
        for name, size in IMAGE_FIELD_SIZES.items():
            value = getattr(self, name)
            if value is not None and len(value) != size:
                raise InvalidGroupData(f"{name} must be {size} bytes, not {len(value)}")

    @property
    def nostr_group_id_hex(self) -> str:
        return self.nostr_group_id.hex()

    def replace(self, **changes: object) -> GroupData:
        """This group data with ``changes`` applied and written in the current layout."""
        return attrs.evolve(self, version=CURRENT_VERSION, **changes)  # type: ignore[arg-type]

    def to_bytes(self) -> bytes:
        """The extension data in the current layout."""
        return encode(
            _Current(
                CURRENT_VERSION,
                self.nostr_group_id,
                self.name.encode(),
                self.description.encode(),
                tuple(bytes.fromhex(admin) for admin in self.admins),
                tuple(url.encode() for url in self.relays),
                *(getattr(self, name) or b"" for name in IMAGE_FIELD_SIZES),
            )
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> GroupData:
        """Decode any of the three layouts; InvalidGroupData names what is wrong."""
        failures = []
        layouts: tuple[type[_Current] | type[_HexAdmins] | type[_Version1], ...] = (_Current, _HexAdmins, _Version1)
        for layout in layouts:
            try:
                raw: _Current | _HexAdmins | _Version1 = decode(layout, data)
            except DecodeError as exc:
                failures.append(f"{layout.__name__.strip('_')}: {exc}")
                continue
            return _from_layout(raw)
        raise InvalidGroupData("the 0xF2EE extension matches no known layout (" + "; ".join(failures) + ")")


def new_group_data(
    nostr_group_id: bytes,
    admins: Iterable[str],
    *,
    name: str = "",
    description: str = "",
    relays: Iterable[str] = (),
) -> GroupData:
    """Group data for a new group (current layout, no image)."""
    return GroupData(nostr_group_id, name, description, tuple(admins), tuple(relays))


# --- in a group's GroupContext --------------------------------------------------------------


def extension(data: GroupData) -> Extension:
    """``data`` as the GroupContext extension."""
    return Extension(GROUP_DATA_EXTENSION, data.to_bytes())


def group_extensions(data: GroupData, *, require_self_remove: bool = True) -> tuple[Extension, ...]:
    """The GroupContext extensions of a new Marmot group: required capabilities naming 0xF2EE, and the group data.

    SelfRemove is required too, as MDK's groups do, so every member can leave
    without an admin's help; ``require_self_remove=False`` makes the kind of
    group older clients made (members then leave by a Remove an admin commits).
    """
    proposals = (SELF_REMOVE_PROPOSAL_TYPE,) if require_self_remove else ()
    required = RequiredCapabilities((GROUP_DATA_EXTENSION,), proposals, ())
    return (Extension(ExtensionType.REQUIRED_CAPABILITIES, encode(required)), extension(data))


def read(state: mls.GroupState) -> GroupData:
    """The group data of ``state``'s current epoch."""
    found = [e.extension_data for e in state.context.extensions if e.extension_type == GROUP_DATA_EXTENSION]
    if len(found) != 1:
        raise InvalidGroupData("the group has no Marmot group data extension (0xF2EE)")
    return GroupData.from_bytes(found[0])


def admins(state: mls.GroupState) -> frozenset[str]:
    """The admins' public keys (hex) at ``state``'s epoch."""
    return frozenset(read(state).admins)


def nostr_group_id(state: mls.GroupState) -> str:
    """The hex ``nostr_group_id`` (the ``h`` tag) at ``state``'s epoch."""
    return read(state).nostr_group_id_hex


def with_changes(state: mls.GroupState, **changes: object) -> tuple[Extension, ...]:
    """``state``'s GroupContext extensions with the group data changed (for a GroupContextExtensions commit)."""
    replaced = extension(read(state).replace(**changes))
    return tuple(replaced if e.extension_type == GROUP_DATA_EXTENSION else e for e in state.context.extensions)


def with_admins(state: mls.GroupState, new_admins: Iterable[str]) -> tuple[Extension, ...]:
    """``state``'s GroupContext extensions with the admin set replaced."""
    return with_changes(state, admins=tuple(new_admins))


def create_group(
    identity: mls.Identity,
    group_id: bytes,
    nostr_group_id: bytes,
    *,
    admins: Iterable[str] | None = None,
    name: str = "",
    description: str = "",
    relays: Iterable[str] = (),
    require_self_remove: bool = True,
    max_past_epochs: int = mls.GroupConfig().max_past_epochs,
    now: int | None = None,
    rng: mls.Rng | None = None,
) -> mls.GroupState:
    """A new Marmot group: the engine's group with the group data extension; admins default to the creator.

    ``now`` (seconds since the epoch, default the clock) starts the creator's leaf lifetime.
    """
    admin_set = {identity.credential} if admins is None else set(admins)
    data = new_group_data(nostr_group_id, admin_set, name=name, description=description, relays=relays)
    extensions = group_extensions(data, require_self_remove=require_self_remove)
    return mls.create_group(
        identity, group_id, extensions=extensions, max_past_epochs=max_past_epochs, now=now, rng=rng
    )


@frozen
class _Current:
    version: Uint16
    nostr_group_id: Key32
    name: Opaque
    description: Opaque
    admin_pubkeys: tuple[Key32, ...]
    relays: tuple[Opaque, ...]
    image_hash: Opaque
    image_key: Opaque
    image_nonce: Opaque
    image_upload_key: Opaque


@frozen
class _Version1:
    version: Uint16
    nostr_group_id: Key32
    name: Opaque
    description: Opaque
    admin_pubkeys: tuple[Opaque, ...]
    relays: tuple[Opaque, ...]
    image_hash: Opaque
    image_key: Opaque
    image_nonce: Opaque


@frozen
class _HexAdmins(_Version1):
    """Version 1 plus the upload key: the layout of early 2026, before admin keys became raw bytes."""

    image_upload_key: Opaque


def _from_layout(raw: _Current | _HexAdmins | _Version1) -> GroupData:
    if raw.version == 0:
        raise InvalidGroupData("0xF2EE version 0 does not exist; the group data is corrupt")
    try:
        text = [raw.name.decode(), raw.description.decode(), *(url.decode() for url in raw.relays)]
    except UnicodeDecodeError:
        raise InvalidGroupData("the group's name, description or a relay URL is not UTF-8") from None
    if isinstance(raw, _Current):
        admins = [key.hex() for key in raw.admin_pubkeys]
    else:
        if any(_HEX_KEY.fullmatch(key) is None for key in raw.admin_pubkeys):
            raise InvalidGroupData("an admin key of the hex layout is not 64 lowercase hex characters")
        admins = [key.decode() for key in raw.admin_pubkeys]
    image = {name: getattr(raw, name, b"") or None for name in IMAGE_FIELD_SIZES}
    return GroupData(
        raw.nostr_group_id,
        text[0],
        text[1],
        tuple(admins),
        tuple(text[2:]),
        version=raw.version,
        **image,
    )
