"""The top-level MLS message (RFC 9420 §6)."""

from __future__ import annotations

from typing import Annotated

from attrs import frozen

from ..codec import Switch
from .key_package import KeyPackage
from .private_message import PrivateMessage
from .public_message import PublicMessage
from .registries import ProtocolVersion, WireFormat
from .welcome import GroupInfo, Welcome

#: What an MLSMessage carries, selected by its ``wire_format`` (RFC 9420 §6).
Message = PublicMessage | PrivateMessage | Welcome | GroupInfo | KeyPackage
WIRE_FORMATS = Switch(
    WireFormat,
    {
        WireFormat.MLS_PUBLIC_MESSAGE: PublicMessage,
        WireFormat.MLS_PRIVATE_MESSAGE: PrivateMessage,
        WireFormat.MLS_WELCOME: Welcome,
        WireFormat.MLS_GROUP_INFO: GroupInfo,
        WireFormat.MLS_KEY_PACKAGE: KeyPackage,
    },
)


@frozen
class MLSMessage:
    """``struct { ProtocolVersion version = mls10; WireFormat wire_format; select (...) {...} }`` (RFC 9420 §6).

    ``message`` holds the RFC's ``wire_format`` and the selected case together.
    """

    version: ProtocolVersion
    message: Annotated[Message, WIRE_FORMATS]

    @property
    def wire_format(self) -> WireFormat:
        return WireFormat(WIRE_FORMATS.tag_of(self.message))
