"""A libxmtp group's state as its group context extensions carry it, read and written in one piece."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from protocols.libraries.xmtp_content import group_context as ids
from protocols.libraries.xmtp_content.errors import MalformedContent
from protocols.libraries.xmtp_content.group_context import GroupMembership, GroupMetadata, MutableMetadata
from protocols.libraries.xmtp_content.policies import PolicySet

_READERS: dict[int, tuple[str, Callable[[bytes], Any]]] = {
    ids.IMMUTABLE_METADATA_EXTENSION_TYPE: ("metadata", GroupMetadata.from_extension_data),
    ids.MUTABLE_METADATA_EXTENSION_TYPE: ("mutable", MutableMetadata.from_bytes),
    ids.GROUP_MEMBERSHIP_EXTENSION_TYPE: ("membership", GroupMembership.from_bytes),
    ids.GROUP_PERMISSIONS_EXTENSION_TYPE: ("policies", PolicySet.from_bytes),
}


@attrs.frozen
class GroupState:
    """Everything libxmtp keeps about a group in its context: the four XMTP extensions, decoded.

    Attributes:
        metadata: conversation type, creator, DM members (never changes).
        mutable: attributes, admins, super admins.
        membership: inbox id -> identity-update sequence id.
        policies: who may change what.
    """

    metadata: GroupMetadata
    mutable: MutableMetadata
    membership: GroupMembership
    policies: PolicySet

    @classmethod
    def from_extensions(cls, extensions: Mapping[int, bytes]) -> GroupState:
        """Read from a group context's extensions (type -> ``extension_data``); others are ignored.

        Raises :class:`MalformedContent` naming the first XMTP extension that is missing or does not decode.
        """
        found: dict[str, Any] = {}
        for extension_type, (name, reader) in _READERS.items():
            if extension_type not in extensions:
                raise MalformedContent(f"the group context has no {name} extension ({extension_type:#06x})")
            found[name] = reader(extensions[extension_type])
        return cls(**found)

    def to_extensions(self) -> dict[int, bytes]:
        """The four extensions' ``extension_data``, by type, as libxmtp reads them."""
        return {
            ids.IMMUTABLE_METADATA_EXTENSION_TYPE: self.metadata.to_extension_data(),
            ids.MUTABLE_METADATA_EXTENSION_TYPE: self.mutable.to_bytes(),
            ids.GROUP_MEMBERSHIP_EXTENSION_TYPE: self.membership.to_bytes(),
            ids.GROUP_PERMISSIONS_EXTENSION_TYPE: self.policies.to_bytes(),
        }
