"""Joining a group: GroupInfo and Welcome (RFC 9420 §12.4.3)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Opaque, Uint32
from .crypto import MAC, KeyPackageRef
from .extensions import Extension
from .group_context import GroupContext
from .psk import PreSharedKeyID
from .registries import AnyCipherSuite
from .update_path import HPKECiphertext


@frozen
class GroupInfoTBS:
    """What a GroupInfo's signature covers: the GroupInfo without its signature (RFC 9420 §12.4.3).

    :class:`GroupInfo` extends it, so ``encode(group_info, GroupInfoTBS)``
    gives the bytes to sign or verify.
    """

    group_context: GroupContext
    extensions: tuple[Extension, ...]
    confirmation_tag: MAC
    signer: Uint32


@frozen
class GroupInfo(GroupInfoTBS):
    """What a joiner needs to know about the group, signed by member ``signer`` (RFC 9420 §12.4.3).

    ``signature`` is ``SignWithLabel(., "GroupInfoTBS", GroupInfoTBS)``.
    """

    signature: Opaque


@frozen
class PathSecret:
    """``struct { opaque path_secret<V>; } PathSecret`` (RFC 9420 §12.4.3.1)."""

    path_secret: Opaque


@frozen
class GroupSecrets:
    """The secrets a Welcome encrypts to each new member (RFC 9420 §12.4.3.1)."""

    joiner_secret: Opaque
    path_secret: PathSecret | None
    psks: tuple[PreSharedKeyID, ...]


@frozen
class EncryptedGroupSecrets:
    """GroupSecrets encrypted to the init key of the KeyPackage ``new_member`` refers to (RFC 9420 §12.4.3.1)."""

    new_member: KeyPackageRef
    encrypted_group_secrets: HPKECiphertext


@frozen
class Welcome:
    """The message that brings new members into a group (RFC 9420 §12.4.3.1)."""

    cipher_suite: AnyCipherSuite
    secrets: tuple[EncryptedGroupSecrets, ...]
    encrypted_group_info: Opaque
