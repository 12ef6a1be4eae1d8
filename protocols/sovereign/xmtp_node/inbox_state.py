"""Each inbox's state after its last identity update, kept in the store's protocol state.

Checking an update needs the inbox's state (who may sign for it, which installations it has); replaying
every stored update through the checks on each publish would cost all their signatures again, so the state
after the last one is kept instead, written in the same transaction as the update's fact.  It is write-side
state, like the store's counters: a rebuild of the tables leaves it as it is.
"""

from __future__ import annotations

import json
from typing import Any

from core.intents import WriteProtocolState
from protocols.libraries.xmtp_identity import Identifier, InboxState

PREFIX = "xmtp/inbox/"  # + inbox id


def load(state: Any, inbox_id: str) -> InboxState | None:
    raw = state.get(PREFIX + inbox_id)
    if raw is None:
        return None
    held = json.loads(raw)
    return InboxState(
        inbox_id=held["inbox_id"],
        recovery_identifier=Identifier(*held["recovery"]),
        identifiers=frozenset(Identifier(kind, value) for kind, value in held["identifiers"]),
        installation_keys=frozenset(bytes.fromhex(key) for key in held["installation_keys"]),
        sequence_id=held["sequence_id"],
    )


def save(inbox: InboxState) -> WriteProtocolState:
    held = {
        "inbox_id": inbox.inbox_id,
        "recovery": [inbox.recovery_identifier.kind, inbox.recovery_identifier.value],
        "identifiers": sorted([identifier.kind, identifier.value] for identifier in inbox.identifiers),
        "installation_keys": sorted(key.hex() for key in inbox.installation_keys),
        "sequence_id": inbox.sequence_id,
    }
    return WriteProtocolState(PREFIX + inbox.inbox_id, json.dumps(held, sort_keys=True).encode())
