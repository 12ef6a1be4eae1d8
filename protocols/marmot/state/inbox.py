"""Where others send us invitations: our inbox relays, and the relays we read gift wraps from.

An inviter sends the gift-wrapped welcome to the inbox relays our kind-10050
list names (NIP-17, as White Noise does), else to the relays our KeyPackage
event names.  So we read our gift wraps from both: the inbox list we
published (``inbox_relays`` command, :mod:`protocols.marmot.commands.account`, kept in protocol state under
``relay_lists/inbox``) and the relays of our unused KeyPackages.  The list is
public once published, so it is stored plain.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from core.intents import WriteProtocolState
from core.state import ProtocolState
from protocols.marmot.state import key_packages

INBOX_RELAYS = "relay_lists/inbox"


def inbox_relays(state: ProtocolState) -> tuple[str, ...]:
    """The relays our published inbox list names (empty before we publish one)."""
    raw = state.get(INBOX_RELAYS)
    return () if raw is None else tuple(json.loads(raw))


def gift_wrap_relays(state: ProtocolState) -> tuple[str, ...]:
    """Every relay an invitation to us may have been sent to: our inbox list, then our KeyPackages' relays."""
    held = [relay for stored in key_packages.stock(state) for relay in stored.relays]
    return tuple(dict.fromkeys([*inbox_relays(state), *held]))


def inbox_relays_intent(relays: Iterable[str]) -> WriteProtocolState:
    """Store ``relays`` as our inbox list (public once published, so plain)."""
    return WriteProtocolState(INBOX_RELAYS, json.dumps(sorted(relays)).encode())
