"""Commands about our account: create it, publish our KeyPackages, set and publish our inbox relays.

Each runs in one transaction and returns facts and intents; what goes to
relays leaves as outgoing intents the tick publishes.
"""

from __future__ import annotations

from typing import Any

from core import contract
from core.errors import InvalidInput
from core.intents import Intent
from core.records import Result
from protocols.marmot import facts
from protocols.marmot.commands.params import relay_urls
from protocols.marmot.relays import normalise_relay_urls
from protocols.marmot.state import account as accounts
from protocols.marmot.state import key_packages
from protocols.marmot.state.inbox import gift_wrap_relays, inbox_relays, inbox_relays_intent
from protocols.marmot.state.store import SealedValues, keycheck_intent, verify_key
from protocols.marmot.transport.nostr_transport import publish_intent
from protocols.marmot.wire.relay_lists import INBOX_RELAYS_KIND, relay_list_event


def command_identity_new(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Create this database's account (``secret_key`` hex imports an existing Nostr key)."""
    values = SealedValues(ctx.state)
    verify_key(values)
    if accounts.load(ctx.state) is not None:
        raise InvalidInput("this database already has a marmot account; `tessera marmot whoami` shows it")
    secret = params.get("secret_key")
    try:
        made = accounts.new_account(bytes.fromhex(secret) if secret else None)
    except ValueError:
        raise InvalidInput("secret_key must be a secp256k1 secret key in 64 hex characters") from None
    intents: list[Intent] = [accounts.intent(values, made)]
    check = keycheck_intent(values)
    intents += [check] if check is not None else []
    return Result(events=[facts.account_created(made.pubkey, ctx.now_ms)], intents=intents)


def command_key_package_publish(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Publish KeyPackages until ``count`` unused ones are out (``relays``; ``last_resort`` marks them reusable)."""
    me = accounts.require(ctx.state)
    relays = relay_urls(params.get("relays"))
    count = int(params.get("count") or key_packages.DEFAULT_STOCK)
    held = key_packages.stock(ctx.state)
    have = len(held)
    if have >= count and not params.get("force"):
        return Result(duplicate=True)
    made, intents = key_packages.publish(
        SealedValues(ctx.state),
        me,
        relays,
        max(count - have, 1),
        last_resort=bool(params.get("last_resort")),
        now=ctx.now_ms // 1000,
    )
    events = [facts.key_package_published(k.ref, k.event_id, k.relays, k.last_resort, ctx.now_ms) for k in made]
    listed = {url for stored in held for url in stored.relays} | set(relays)
    relay_list = key_packages.relay_list_intent(me, sorted(listed), ctx.now_ms // 1000)
    return Result(events=events, intents=[*intents, relay_list])


def command_inbox_relays(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Set our inbox relays to ``relays`` and publish the kind-10050 list (to them and our KeyPackage relays)."""
    me = accounts.require(ctx.state)
    relays = normalise_relay_urls(params.get("relays") or ())
    if tuple(sorted(relays)) == tuple(sorted(inbox_relays(ctx.state))) and not params.get("force"):
        return Result(duplicate=True)
    listed = me.sign(relay_list_event(INBOX_RELAYS_KIND, relays, ctx.now_ms // 1000))
    everywhere = sorted({*relays, *gift_wrap_relays(ctx.state)})
    intents: list[Intent] = [
        inbox_relays_intent(relays),
        publish_intent(listed, everywhere),
    ]
    return Result(events=[facts.inbox_relays_set(listed["id"], sorted(relays), ctx.now_ms)], intents=intents)
