"""Each inbox's state after its last identity update, kept in the store's protocol state.

Checking an update needs the inbox's state (who may sign for it, which signatures it has seen); replaying
every stored update through the checks on each publish would verify all their signatures again, so the
state after the last one is kept instead (the identity library's own form of it, upstream's
AssociationState), written in the same transaction as the update's fact.  It is write-side state, like the
store's counters: a rebuild of the tables leaves it as it is.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from core.intents import WriteProtocolState
from protocols.libraries.xmtp_identity import InboxState, inbox_state_from_bytes, inbox_state_to_bytes

PREFIX = "xmtp/inbox/"  # + inbox id


def load(state: Any, inbox_id: str) -> InboxState | None:
    raw = state.get(PREFIX + inbox_id)
    if raw is None:
        return None
    held = json.loads(raw)
    return inbox_state_from_bytes(base64.b64decode(held["state"]), sequence_id=held["sequence_id"])


def save(inbox: InboxState) -> WriteProtocolState:
    held = {"sequence_id": inbox.sequence_id, "state": base64.b64encode(inbox_state_to_bytes(inbox)).decode("ascii")}
    return WriteProtocolState(PREFIX + inbox.inbox_id, json.dumps(held, sort_keys=True).encode())
