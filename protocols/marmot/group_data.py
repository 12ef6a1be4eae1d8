"""Marmot's group data: the GroupContext extension ``0xF2EE`` that names a group's admins (MIP-01).

Every member must support the extension (the group's ``required_capabilities``
name it), and every change to it is a GroupContextExtensions commit, so all
members agree on who the admins are at each epoch.  The layout is version 2
of the extension as MDK writes it: RFC 9420 variable-length vectors after a
``uint16`` version and the 32-byte ``nostr_group_id``.

Admins decide what non-admins may commit: only a pure self-update (a commit
that changes nothing but the committer's own keys).  :func:`process_message`
enforces that for every commit a member receives.
"""

from __future__ import annotations

from collections.abc import Iterable

from attrs import frozen

from core.errors import InvalidInput
from protocols import mls
from protocols.mls.codec import Opaque, Uint16, decode, encode
from protocols.mls.messages import Extension, ExtensionType, RequiredCapabilities

GROUP_DATA_TYPE = 0xF2EE
VERSION = 2


class InvalidGroupData(InvalidInput):
    """The group's 0xF2EE extension is missing or does not decode."""


@frozen
class ImageFields:
    """The group image fields (empty when the group has no image)."""

    image_hash: Opaque
    image_key: Opaque
    image_nonce: Opaque
    image_upload_key: Opaque


@frozen
class GroupData:
    """``marmot_group_data`` version 2.

    Attributes:
        version: the layout version (2).
        nostr_group_id: the 32-byte id that names the group on relays (the ``h`` tag).
        name: the group's name.
        description: the group's description.
        admin_pubkeys: the admins' 32-byte Nostr public keys.
        relays: the relay URLs the group uses.
        image: the group image fields.
    """

    version: Uint16
    nostr_group_id: Opaque
    name: Opaque
    description: Opaque
    admin_pubkeys: tuple[Opaque, ...]
    relays: tuple[Opaque, ...]
    image: ImageFields


NO_IMAGE = ImageFields(b"", b"", b"", b"")


def extension(nostr_group_id: bytes, admins: Iterable[str], *, name: str = "", description: str = "") -> Extension:
    """The group data extension for a group whose admins are ``admins`` (hex public keys)."""
    keys = tuple(sorted(bytes.fromhex(admin) for admin in set(admins)))
    if any(len(key) != 32 for key in keys) or len(nostr_group_id) != 32:
        raise InvalidInput("Marmot admins and the nostr group id are 32-byte keys")
    data = GroupData(VERSION, nostr_group_id, name.encode(), description.encode(), keys, (), NO_IMAGE)
    return Extension(GROUP_DATA_TYPE, encode(data))


def group_extensions(nostr_group_id: bytes, admins: Iterable[str]) -> tuple[Extension, ...]:
    """The GroupContext extensions of a new Marmot group: required capabilities naming 0xF2EE, and the group data."""
    required = RequiredCapabilities((GROUP_DATA_TYPE,), (), ())
    return (
        Extension(ExtensionType.REQUIRED_CAPABILITIES, encode(required)),
        extension(nostr_group_id, admins),
    )


def read(state: mls.GroupState) -> GroupData:
    """The group data of ``state``'s current epoch."""
    found = [e.extension_data for e in state.context.extensions if e.extension_type == GROUP_DATA_TYPE]
    if len(found) != 1:
        raise InvalidGroupData("the group has no Marmot group data extension (0xF2EE)")
    try:
        return decode(GroupData, found[0])
    except mls.InvalidMessage as exc:
        raise InvalidGroupData(f"the group's 0xF2EE extension does not decode: {exc}") from None


def admins(state: mls.GroupState) -> frozenset[str]:
    """The admins' public keys (hex) at ``state``'s epoch."""
    return frozenset(key.hex() for key in read(state).admin_pubkeys)


def with_admins(state: mls.GroupState, new_admins: Iterable[str]) -> tuple[Extension, ...]:
    """``state``'s GroupContext extensions with the admin set replaced (for a GroupContextExtensions commit)."""
    current = read(state)
    replaced = extension(
        current.nostr_group_id, new_admins, name=current.name.decode(), description=current.description.decode()
    )
    return tuple(replaced if e.extension_type == GROUP_DATA_TYPE else e for e in state.context.extensions)


def process_message(state: mls.GroupState, message: bytes) -> mls.ProcessResult:
    """The engine's ``process_message`` with Marmot's rule: a non-admin's commit may only refresh its own keys.

    Raises :class:`~protocols.mls.UnauthorizedCommit` for any other commit by a non-admin.
    """
    result = mls.process_message(state, message)
    if isinstance(result, mls.CommitApplied):
        check_commit(state, result.committer_credential, pure_self_update=is_pure_self_update(result))
    return result


def check_commit(before: mls.GroupState, committer: str, *, pure_self_update: bool) -> None:
    """Refuse a commit by a non-admin unless it only refreshes the committer's own keys."""
    if not pure_self_update and committer not in admins(before):
        raise mls.UnauthorizedCommit(f"{committer[:12]} is not an admin; non-admins may only commit a self-update")


def is_pure_self_update(result: mls.CommitApplied) -> bool:
    """Whether a commit changed nothing but its committer's own keys."""
    return (
        not result.added
        and not result.removed
        and not result.extensions_changed
        and set(result.updated) <= {result.committer_credential}
    )


def create_group(
    identity: mls.Identity,
    group_id: bytes,
    *,
    admins: Iterable[str] | None = None,
    max_past_epochs: int = mls.GroupConfig().max_past_epochs,
    now: int | None = None,
    rng: mls.Rng | None = None,
) -> mls.GroupState:
    """A new Marmot group: the engine's group with the group data extension; admins default to the creator.

    ``now`` (seconds since the epoch, default the clock) starts the creator's leaf lifetime.
    """
    admin_set = {identity.credential} if admins is None else set(admins)
    extensions = group_extensions(group_id, admin_set)
    return mls.create_group(
        identity, group_id, extensions=extensions, max_past_epochs=max_past_epochs, now=now, rng=rng
    )


def create_key_package(
    identity: mls.Identity, *, now: int | None = None, rng: mls.Rng | None = None
) -> tuple[mls.KeyPackage, mls.KeyPackagePrivate]:
    """A KeyPackage that can join Marmot groups: it supports the group data extension."""
    return mls.create_key_package(identity, supported_extensions=(GROUP_DATA_TYPE,), now=now, rng=rng)
