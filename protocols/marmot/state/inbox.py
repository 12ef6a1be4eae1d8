"""Where others send us invitations: our inbox relays, and the relays we read gift wraps from.

An inviter sends the gift-wrapped welcome to the inbox relays our kind-10050
list names (NIP-17, as White Noise does), else to the relays our KeyPackage
event names.  So we read our gift wraps from both: the inbox list we
published (``inbox_relays`` command, kept in protocol state under
``relay_lists/inbox``) and the relays of our unused KeyPackages.  The list is
public once published, so it is stored plain.
"""

from __future__ import annotations

import json
from typing import Any

from core.intents import Intent, WriteProtocolState
from core.records import Result
from core.state import ProtocolState
from protocols.marmot import facts
from protocols.marmot.nostr_transport import publish_intent
from protocols.marmot.relays import normalise_relay_urls
from protocols.marmot.state import account as accounts
from protocols.marmot.state import key_packages
from protocols.marmot.wire.relay_lists import INBOX_RELAYS_KIND, relay_list_event

INBOX_RELAYS = "relay_lists/inbox"


def inbox_relays(state: ProtocolState) -> tuple[str, ...]:
    """The relays our published inbox list names (empty before we publish one)."""
    raw = state.get(INBOX_RELAYS)
    return () if raw is None else tuple(json.loads(raw))


def gift_wrap_relays(state: ProtocolState) -> tuple[str, ...]:
    """Every relay an invitation to us may have been sent to: our inbox list, then our KeyPackages' relays."""
    held = [relay for stored in key_packages.stock(state) for relay in stored.relays]
    return tuple(dict.fromkeys([*inbox_relays(state), *held]))


def command_inbox_relays(ctx: Any, params: dict[str, Any]) -> Result:
    """Set our inbox relays to ``relays`` and publish the kind-10050 list (to them and our KeyPackage relays)."""
    me = accounts.require(ctx.state)
    relays = normalise_relay_urls(params.get("relays") or ())
    if tuple(sorted(relays)) == tuple(sorted(inbox_relays(ctx.state))) and not params.get("force"):
        return Result(duplicate=True)
    listed = me.sign(relay_list_event(INBOX_RELAYS_KIND, relays, ctx.now_ms // 1000))
    everywhere = sorted({*relays, *gift_wrap_relays(ctx.state)})
    intents: list[Intent] = [
        WriteProtocolState(INBOX_RELAYS, json.dumps(sorted(relays)).encode()),
        publish_intent(listed, everywhere),
    ]
    return Result(events=[facts.inbox_relays_set(listed["id"], sorted(relays), ctx.now_ms)], intents=intents)
