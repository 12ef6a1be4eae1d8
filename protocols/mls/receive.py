"""``process_message``: route a group message to the right handler.

Checks happen cheapest first: envelope and group id, epoch window, our own
pending commit coming back, then decryption and signature (in
:mod:`protocols.mls.protect`), then the content-specific handler.
"""

from __future__ import annotations

from . import framing
from .application import application_received
from .commit import apply_commit, message_ref, own_commit_applied
from .errors import InvalidMessage, NotAMember, WrongEpoch
from .proposing import handle_proposal
from .protect import receive
from .results import ProcessResult
from .state import GroupState


def _check_epoch(state: GroupState, env: framing.Envelope) -> None:
    if env.epoch > state.epoch:
        if not state.active:
            raise NotAMember("we were removed; later epochs are not readable")
        raise WrongEpoch(env.epoch, state.epoch, "message is from a future epoch; apply the missing commits first")
    if env.content_type != framing.APPLICATION:
        if env.epoch < state.epoch:
            raise WrongEpoch(env.epoch, state.epoch, "proposals and commits are only accepted for the current epoch")
        if not state.active:
            raise NotAMember("we were removed; handshake messages no longer apply to us")


def process_message(state: GroupState, message: bytes) -> ProcessResult:
    """Decrypt, verify and apply one group message; returns a result holding ``new_state``."""
    env = framing.parse(message)
    if env.group_id != state.group_id:
        raise InvalidMessage("message is for a different group")
    _check_epoch(state, env)
    pending = state.pending_commit
    if env.content_type == framing.COMMIT and pending is not None and message_ref(message) == pending.message_ref:
        return own_commit_applied(state)
    received, new_state = receive(state, env)
    if env.content_type == framing.APPLICATION:
        return application_received(received, new_state)
    if env.content_type == framing.PROPOSAL:
        return handle_proposal(received, new_state)
    return apply_commit(new_state, received)
