"""``tessera marmot send``, ``react`` and ``delete``: a rumor recorded now, published by the tick at once."""

from __future__ import annotations

from typing import Any

import click

from protocols.marmot.cli.publish import publish_now, report, timeout_option
from protocols.marmot.cli.support import group_id, group_option, json_option, message_id
from protocols.marmot.read.history import GroupHistoryStore


def _send_rumor(obj: Any, command: str, params: dict[str, Any], timeout_s: int, as_json: bool) -> None:
    """Run ``marmot.<command>`` for the group ``params`` names, publish, and print the rumor's id."""
    app = obj.app()
    params["group"] = group_id(app, params["group"])
    if "target" in params:
        params["target"] = message_id(app, params["group"], params["target"])
    outcome = app.runtime.run_command(f"marmot.{command}", params)
    if not outcome.events:
        report(
            as_json, {"rumor": None, "duplicate": True}, ["already sent (same content within the same second)"], None
        )
        return
    data = outcome.events[0].data
    rumor_id = data["rumor"]["id"] if "rumor" in data else data["rumor_id"]
    summary = publish_now(app, timeout_s)
    with app.db.read():
        known = GroupHistoryStore(app.db, params["group"]).outer_record(data["outer_id"])
    state = known.state if known is not None else None  # Created until a relay (or the loopback) hands it back
    said = f"sent rumor {rumor_id}" + (f" ({state})" if state else "")
    report(
        as_json, {"rumor": rumor_id, "state": state, "publish": summary.to_json()}, [said, *summary.lines()], summary
    )


@click.command()
@group_option
@timeout_option
@json_option
@click.argument("text")
@click.pass_obj
def send(obj: Any, gid: str, timeout_s: int, as_json: bool, text: str) -> None:
    """Send TEXT to a group, and publish it now."""
    _send_rumor(obj, "send", {"group": gid, "text": text}, timeout_s, as_json)


@click.command()
@group_option
@click.option(
    "--to", "target", required=True, help="Id of the message to react to, or a unique prefix (`history` shows them)."
)
@timeout_option
@json_option
@click.argument("emoji")
@click.pass_obj
def react(obj: Any, gid: str, target: str, timeout_s: int, as_json: bool, emoji: str) -> None:
    """React to a message with EMOJI (or + / -), and publish the reaction now."""
    _send_rumor(obj, "react", {"group": gid, "target": target, "emoji": emoji}, timeout_s, as_json)


@click.command()
@group_option
@timeout_option
@json_option
@click.argument("target", metavar="MESSAGE_ID")
@click.pass_obj
def delete(obj: Any, gid: str, timeout_s: int, as_json: bool, target: str) -> None:
    """Delete our message MESSAGE_ID (or a unique prefix of it): members drop it from their history."""
    _send_rumor(obj, "delete", {"group": gid, "target": target}, timeout_s, as_json)


COMMANDS = (send, react, delete)
