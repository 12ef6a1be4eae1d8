"""Application messages: one application-ratchet generation per message."""

from __future__ import annotations

from . import framing, suite
from .errors import InvalidArgument
from .protect import Received, send
from .results import ApplicationReceived
from .state import GroupState, require_active


def encrypt_application(
    state: GroupState, plaintext: bytes, *, rng: suite.Rng | None = None
) -> tuple[bytes, GroupState]:
    """Encrypt and sign ``plaintext`` for the group: ``(message, new_state)``.

    The key of the generation used is gone from ``new_state``: not even the
    sender can decrypt the message afterwards.
    """
    require_active(state)
    if not isinstance(plaintext, (bytes, bytearray)):
        raise InvalidArgument("plaintext must be bytes")
    message, new_state, _, _ = send(state, framing.APPLICATION, bytes(plaintext), rng)
    return message, new_state


def application_received(received: Received, new_state: GroupState) -> ApplicationReceived:
    return ApplicationReceived(
        received.signer.credential, received.content.body, received.epoch, received.sender.generation, new_state
    )
