"""Framing and protecting what this member sends in the current epoch (RFC 9420 section 6)."""

from __future__ import annotations

from ..codec import encode
from ..crypto import Rng
from ..messages import AuthenticatedContent, Content, MLSMessage, ProtocolVersion, WireFormat
from ..messages.fast_codec import encode_private_mls_message
from ..protection import EpochView, pad_to_multiple, protect_private, protect_public, sign_own_content
from .refusals import GroupInactive, GroupReinitialized
from .state import GroupState


def handshake_wire_format(state: GroupState) -> WireFormat:
    """How this member sends proposals and commits, by its configuration."""
    private = state.config.private_handshakes
    return WireFormat.MLS_PRIVATE_MESSAGE if private else WireFormat.MLS_PUBLIC_MESSAGE


def sign(
    state: GroupState, wire_format: WireFormat, content: Content, authenticated_data: bytes = b""
) -> AuthenticatedContent:
    """``content`` framed as sent by this member in the current epoch, signed for ``wire_format``."""
    if not state.active:
        raise GroupInactive("this member was removed from the group; it can no longer send")
    if state.reinit is not None:
        raise GroupReinitialized(
            f"a ReInit closed this group at epoch {state.epoch}: continue in group {state.reinit.group_id.hex()[:16]}"
        )
    return sign_own_content(state.view, state.signature_private, wire_format, content, authenticated_data)


def protect(state: GroupState, authenticated: AuthenticatedContent, rng: Rng | None) -> tuple[bytes, EpochView]:
    """The encoded MLSMessage for signed content, and the view without the key a PrivateMessage used."""
    if authenticated.wire_format == WireFormat.MLS_PUBLIC_MESSAGE:
        return encode(MLSMessage(ProtocolVersion.MLS10, protect_public(state.view, authenticated))), state.view
    block = state.config.padding
    padding = pad_to_multiple(block) if block else 0
    view, message = protect_private(state.view, authenticated, padding=padding, rng=rng)
    return encode_private_mls_message(message), view
