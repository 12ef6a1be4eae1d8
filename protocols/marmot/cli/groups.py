"""``tessera marmot`` commands that change who is in a group, and the ones that show it.

``create-group``, ``add-members``, ``remove-members``, ``update-key`` and ``leave`` each
run one plugin command (one transaction) and then the tick, so a commit is
published, comes back from a relay and is applied, and the welcomes it held
back are sent, before the command returns (see :mod:`.publish`).
``add-members`` first fetches each invitee's KeyPackage from relays
(:mod:`.invitees`), outside any transaction.  The old names (``invite``,
``remove``, ``self-update``, ``decline``) still run them, hidden from ``--help``
(docs/cli.md: the same verbs as ``tessera xmtp``).
"""

from __future__ import annotations

import json
from typing import Any

import click

from core import contract
from core.state import ProtocolState
from jobs import hints, times
from jobs.cli_options import hidden_alias
from jobs.output import plural
from protocols.libraries import mls
from protocols.marmot.cli import ids
from protocols.marmot.cli.invitees import find_invitee
from protocols.marmot.cli.publish import PublishSummary, publish_now, report, timeout_option
from protocols.marmot.cli.support import (
    emit,
    group_option,
    joined_group,
    json_option,
    public_keys,
    relay_option,
    relay_urls,
    short_key,
)
from protocols.marmot.commands.groups import NotAnAdmin
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.member import MarmotMember
from protocols.marmot.read import queries
from protocols.marmot.read.states import WelcomeState
from protocols.marmot.state import account as accounts
from protocols.marmot.state.store import load_joined
from protocols.marmot.wire import group_data, nip19

_PENDING_WELCOMES = (
    "SELECT welcome_id, received_at_ms, sender, gid, data FROM marmot_welcomes "
    "WHERE state = ? ORDER BY received_at_ms, welcome_id"  # WelcomeState.PENDING
)


def _group_row(app: contract.App, gid: str) -> dict[str, Any]:
    return next(row for row in queries.groups(app.db) if row["group"] == gid)


def _report_change(app: contract.App, gid: str, change: str, summary: PublishSummary, as_json: bool) -> None:
    """Print where ``gid`` stands after ``change`` of ours, and what the relays said."""
    row = _group_row(app, gid)
    standing = f"{change}: group {gid} is at epoch {row['epoch']} with {plural(row['members'], 'member')}"
    shown = {"group": gid, "change": change, "now": row, "publish": summary.to_json()}
    report(as_json, shown, [standing, *summary.lines()], summary)


def _change(
    obj: Any, gid: str, command: str, params: dict[str, Any], timeout_s: int, as_json: bool, shown_as: str = ""
) -> None:
    """Run ``marmot.<command>`` on the joined group ``gid`` names, publish, and report where the group stands
    (``shown_as``: the command line's name of the change, when it is not the plugin command's)."""
    app = obj.app()
    gid = joined_group(app, gid)
    app.runtime.run_command(f"marmot.{command}", {"group": gid, **params})
    _report_change(app, gid, shown_as or command.replace("_", "-"), publish_now(app, timeout_s), as_json)


@click.command("create-group")
@click.option("--name", required=True, help="The group's name, shown to members.")
@click.option("--description", default="", help="A line about the group, shown to members.")
@click.option("--admin", "admins", multiple=True, help="Another admin besides us (npub or hex; repeatable).")
@relay_option("Relay the group's messages go through (repeatable).", required=True)
@json_option
@click.pass_obj
def create_group(
    obj: Any, name: str, description: str, admins: tuple[str, ...], relays: tuple[str, ...], as_json: bool
) -> None:
    """Create a group with us as its only member and an admin, then print its id."""
    params = {"name": name, "description": description, "admins": public_keys(admins), "relays": relay_urls(relays)}
    event = obj.app().runtime.run_command("marmot.create_group", params).events[0]
    gid = event.partition_key
    shown = {"group": gid, "name": name, "admins": event.data["admins"], "relays": params["relays"]}
    emit(
        as_json,
        shown,
        [f"created group {gid}", f"add members with `{hints.command('marmot', 'add-members', '--group', gid)} NPUB`"],
    )


def _invite_relays(app: contract.App, gid: str) -> list[str]:
    """The group's relays, once we know we may invite to it (an account, a joined group, an admin)."""
    with app.db.read():
        state = ProtocolState(app.db, PROTOCOL)
        me = accounts.require(state)
        loaded = load_joined(state, gid)
    if me.pubkey not in group_data.admins(loaded.state):
        raise NotAnAdmin(f"only an admin of group {gid} may invite; `tessera marmot members --group {gid}` lists them")
    return list(group_data.read(loaded.state).relays)


@click.command("add-members")
@group_option
@relay_option("Also look for the invitees' KeyPackages on this relay (repeatable).")
@timeout_option
@json_option
@click.argument("invitees", metavar="MEMBERS...", nargs=-1, required=True)
@click.pass_obj
def add_members(
    obj: Any, gid: str, relays: tuple[str, ...], timeout_s: int, as_json: bool, invitees: tuple[str, ...]
) -> None:
    """Add MEMBERS (npub or hex) to a group: fetch their KeyPackages, commit, publish, send the welcomes."""
    pubkeys, extra = public_keys(invitees), relay_urls(relays)
    app = obj.app()
    gid = joined_group(app, gid)
    where = list(dict.fromkeys([*extra, *_invite_relays(app, gid)]))
    now = app.clock.now_ms() // 1000
    transport = app.service(MarmotMember).relays()
    found = [find_invitee(transport, pubkey, where, now) for pubkey in pubkeys]
    params = {
        "group": gid,
        "key_package_events": [invitee.key_package_event for invitee in found],
        "inboxes": {invitee.pubkey: list(invitee.inbox) for invitee in found if invitee.inbox},
    }
    app.runtime.run_command("marmot.invite", params)
    used = {invitee.pubkey: json.loads(invitee.key_package_event)["id"] for invitee in found}
    if not as_json:
        for pubkey, event_id in used.items():
            click.echo(f"inviting {short_key(pubkey)} with KeyPackage {event_id}")
    _report_change(app, gid, "add-members", publish_now(app, timeout_s), as_json)


@click.command("remove-members")
@group_option
@timeout_option
@json_option
@click.argument("members", metavar="MEMBERS...", nargs=-1, required=True)
@click.pass_obj
def remove_members(obj: Any, gid: str, timeout_s: int, as_json: bool, members: tuple[str, ...]) -> None:
    """Remove MEMBERS (npub or hex) from a group (admins only), and publish the commit."""
    _change(obj, gid, "remove", {"members": public_keys(members)}, timeout_s, as_json, shown_as="remove-members")


@click.command("update-key")
@group_option
@timeout_option
@json_option
@click.pass_obj
def update_key(obj: Any, gid: str, timeout_s: int, as_json: bool) -> None:
    """Rotate our own keys in a group (a self-update commit, which any member may make), and publish it."""
    _change(obj, gid, "self_update", {}, timeout_s, as_json, shown_as="update-key")


@click.command()
@group_option
@timeout_option
@json_option
@click.pass_obj
def leave(obj: Any, gid: str, timeout_s: int, as_json: bool) -> None:
    """Ask to leave a group: publish a SelfRemove proposal any member commits (a Remove for an admin to commit
    where some member does not support SelfRemove)."""
    _change(obj, gid, "leave", {}, timeout_s, as_json)


@click.command()
@group_option
@json_option
@click.pass_obj
def members(obj: Any, gid: str, as_json: bool) -> None:
    """List a group's members as the group state has them: npub, hex, admin, us."""
    app = obj.app()
    gid = joined_group(app, gid)
    with app.db.read():
        state = load_joined(ProtocolState(app.db, PROTOCOL), gid).state
    admins, me = group_data.admins(state), mls.own_credential(state)
    rows = [
        {"pubkey": key, "npub": nip19.npub(key), "admin": key in admins, "self": key == me}
        for key in sorted(set(mls.member_credentials(state).values()))
    ]
    lines = [
        f"{row['npub']}  {row['pubkey']}" + (" admin" if row["admin"] else "") + (" (us)" if row["self"] else "")
        for row in rows
    ]
    emit(as_json, rows, [*lines, f"{plural(len(rows), 'member')} at epoch {state.epoch}"])


@click.command("welcomes")
@json_option
@click.pass_obj
def list_welcomes(obj: Any, as_json: bool) -> None:
    """List pending invitations (accept or reject them by id)."""
    app = obj.app()
    with app.db.read():
        rows = app.db.all(_PENDING_WELCOMES, (WelcomeState.PENDING,))
    pending = [
        {"id": welcome_id, "received_at_ms": received, "sender": sender, "group": gid.hex(), **_invitation(data)}
        for welcome_id, received, sender, gid, data in rows
    ]
    lines = [
        f"{p['id']}  from {short_key(p['sender'])}  group {p['name']!r} ({plural(p['members'], 'member')}, "
        f"epoch {p['epoch']})  received {times.utc(p['received_at_ms'])}"
        for p in pending
    ]
    emit(as_json, pending, [*lines, f"{plural(len(pending), 'pending invitation')}"])


def _invitation(data: str) -> dict[str, Any]:
    info = json.loads(data)
    keys = ("name", "description", "admins", "relays", "members", "epoch", "nostr_group_id")
    return {key: info.get(key) for key in keys}


@click.command()
@click.argument("welcome_id")
@timeout_option
@json_option
@click.pass_obj
def accept(obj: Any, welcome_id: str, timeout_s: int, as_json: bool) -> None:
    """Join the group of pending invitation WELCOME_ID, or a unique prefix of it (`welcomes` lists them)."""
    app = obj.app()
    outcome = app.runtime.run_command("marmot.accept", {"welcome": ids.welcome(app, welcome_id)})
    gid = outcome.events[0].partition_key
    _report_change(app, gid, "accept", publish_now(app, timeout_s), as_json)


@click.command()
@click.argument("welcome_id")
@timeout_option
@json_option
@click.pass_obj
def reject(obj: Any, welcome_id: str, timeout_s: int, as_json: bool) -> None:
    """Decline pending invitation WELCOME_ID (or a unique prefix); its KeyPackage is replaced by a fresh one."""
    app = obj.app()
    welcome_id = ids.welcome(app, welcome_id)
    app.runtime.run_command("marmot.decline", {"welcome": welcome_id})
    summary = publish_now(app, timeout_s)
    shown = {"declined": welcome_id, "publish": summary.to_json()}
    report(as_json, shown, [f"declined {welcome_id}", *summary.lines()], summary)


COMMANDS = (
    create_group,
    add_members,
    remove_members,
    update_key,
    leave,
    members,
    list_welcomes,
    accept,
    reject,
    hidden_alias(add_members, "invite"),
    hidden_alias(remove_members, "remove"),
    hidden_alias(update_key, "self-update"),
    hidden_alias(reject, "decline"),
)
