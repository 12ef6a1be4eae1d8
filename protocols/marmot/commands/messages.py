"""Commands that send to a group: a message, a reaction or a deletion.

Each runs in one transaction (``runtime.run_command``) and, like handlers,
return facts and intents; the engine state they change is written through
``WriteProtocolState``.
"""

from __future__ import annotations

from typing import Any

from core import contract
from core.errors import InvalidInput
from core.records import Result
from protocols.libraries import mls
from protocols.marmot import facts
from protocols.marmot.member import opened_values
from protocols.marmot.processing.item import Item
from protocols.marmot.processing.messages import deletion
from protocols.marmot.state import seen
from protocols.marmot.state.store import load_joined
from protocols.marmot.transport import nostr_transport
from protocols.marmot.wire import group_data, outer, rumors


def command_send(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Send ``text`` to ``group``: recorded Created now, published by the tick.

    The rumor's id covers author, second and text, so sending the same text
    again within one second is treated as a retry of the same message.
    ``created_at`` (seconds), ``kind`` and ``tags`` may be given;
    ``transport`` defaults to ``nostr`` (the group's relays) when the group
    names relays and to ``loopback`` when it does not.
    """
    text = params.get("text")
    if not isinstance(text, str) or not text:
        raise InvalidInput("send needs a non-empty text")
    kind = params.get("kind", rumors.CHAT_KIND)
    if kind == rumors.DELETION_KIND:
        raise InvalidInput("deletions are not sent with send; use delete")
    return _send(ctx, params, kind, text, params.get("tags") or [])


def command_react(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """React to message ``target`` of ``group`` with ``emoji`` (NIP-25: a kind-7 rumor naming it)."""
    emoji = params.get("emoji")
    if not isinstance(emoji, str) or not emoji:
        raise InvalidInput("react needs a reaction, e.g. + or an emoji")
    target, author = _target(ctx, params)
    return _send(ctx, params, rumors.REACTION_KIND, emoji, [["e", target], ["p", author], ["k", str(rumors.CHAT_KIND)]])


def command_delete(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Delete our message ``target`` of ``group`` (a kind-5 rumor; members drop it from their history)."""
    target, author = _target(ctx, params)
    loaded = load_joined(ctx.state, params.get("group"), opened_values(ctx.runtime))
    if author != mls.own_credential(loaded.state):
        raise InvalidInput(f"message {target[:16]} is not ours; members ignore deletions of others' messages")
    return _send(ctx, params, rumors.DELETION_KIND, "", [["e", target], ["k", str(rumors.CHAT_KIND)]])


def _target(ctx: contract.Context, params: dict[str, Any]) -> tuple[str, str]:
    """The message ``target`` names and its author."""
    loaded = load_joined(ctx.state, params.get("group"), opened_values(ctx.runtime))
    target = str(params.get("target") or "").lower()
    well_formed = len(target) == 64 and all(c in "0123456789abcdef" for c in target)
    known = seen.author(ctx.state, loaded.gid, target) if well_formed else None
    if known is None:
        raise InvalidInput(f"group {loaded.gid} has no message {target or '(none given)'}; `history` lists them")
    return target, known


def _send(ctx: contract.Context, params: dict[str, Any], kind: int, content: str, tags: list) -> Result:
    loaded = load_joined(ctx.state, params.get("group"), opened_values(ctx.runtime))
    gid, state = loaded.gid, loaded.state
    if not state.active:
        raise InvalidInput(f"we were removed from group {gid}; it is read-only")
    created_at = int(params.get("created_at") or ctx.now_ms // 1000)
    rumor = rumors.make(mls.own_credential(state), created_at, content, kind=kind, tags=tags)
    if seen.author(ctx.state, gid, rumor["id"]) is not None:
        return Result(duplicate=True)
    draw = outer.derived_rng(state.signature_private, state.epoch.to_bytes(8, "big"), bytes.fromhex(rumor["id"]))
    message, new_state = mls.encrypt_application(state, rumors.encode(rumor), rng=draw)
    event = outer.seal(state, message, group_data.nostr_group_id(state), created_at, rng=draw)
    sent = facts.Outer(gid, event)
    intents = (
        *loaded.state_written(new_state),
        nostr_transport.group_event_intent(state, event, params.get("transport")),
    )
    if kind == rumors.DELETION_KIND:  # we cannot read our own message back: its effect is recorded now
        decided = deletion(Item(ctx, sent, None, loaded), rumor, state.epoch, intents)
        return seen.with_records(ctx.state, decided, loaded.meta.window_start)
    fact = facts.about(facts.MESSAGE_SENT, sent, loaded.meta.generation, epoch=state.epoch, rumor=rumor)
    return seen.with_records(ctx.state, Result(events=[fact], intents=intents), loaded.meta.window_start)
