"""Sending application data to the group (RFC 9420 section 6.3): always a PrivateMessage."""

from __future__ import annotations

import attrs

from ..crypto import Rng
from ..messages import ApplicationData, WireFormat
from .sending import protect, sign
from .state import GroupState


def encrypt_application(
    state: GroupState, data: bytes, *, authenticated_data: bytes = b"", rng: Rng | None = None
) -> tuple[bytes, GroupState]:
    """``data`` as an encoded PrivateMessage of the current epoch, and the state without the key it used."""
    authenticated = sign(state, WireFormat.MLS_PRIVATE_MESSAGE, ApplicationData(data), authenticated_data)
    message, view = protect(state, authenticated, rng)
    return message, attrs.evolve(state, view=view)
