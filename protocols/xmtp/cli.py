"""``tessera xmtp ...``: the XMTP-style client from the command line, one database per person.

Commands that change a group write an intent and then make one publish and
sync round at once (``--no-publish`` leaves that to the tick daemon or a
running ``listen``), so two people on two databases talk through one
``tessera serve`` with nothing else running.  Every listing has ``--json``.
Commands that reach the server exit by the contract of network commands
(jobs/outcome.py): 0 done, 5 when an intent still waits to be published
(retried by the tick daemon, ``listen`` or the next ``sync``), 4 when the
server could not be reached, 1 when something was refused.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from core import eventlog
from core.errors import InvalidInput
from jobs import hints, outcome, output, times
from jobs.cli_errors import fail_after_report
from jobs.cli_options import json_option
from jobs.id_prefix import IdRange, resolve
from jobs.outcome import Outcome
from protocols.xmtp import connection, facts, keypackages, publishing, queries, sync
from protocols.xmtp.connection import XmtpMember
from protocols.xmtp.errors import GroupUnknown, NodeProfileOnly, ServiceUnavailable, SyncIncomplete
from protocols.xmtp.identity import parse_address
from protocols.xmtp.kinds import IntentState, Membership, MessageKind
from protocols.xmtp.node_profile import cli as node_cli
from protocols.xmtp.node_profile import content as node_content
from protocols.xmtp.node_profile import registration
from protocols.xmtp.node_profile import sync as node_sync
from protocols.xmtp.state import Vault

if TYPE_CHECKING:
    from core.app import App
    from jobs.cli import CliState


_GROUP = "SELECT 1 FROM xmtp_groups WHERE id = ?"
_GROUPS = "SELECT id FROM xmtp_groups WHERE id >= ? AND id < ? ORDER BY id LIMIT ?"


def _group_id(app: App, text: str, given_as: str = "--group") -> bytes:
    """The group ``text`` names (``given_as``: the option or argument, for the error): its id in hex, or a unique
    prefix of it (as ``groups`` shows them)."""
    wanted = text.strip().lower()
    if not wanted or any(c not in "0123456789abcdef" for c in wanted):
        raise InvalidInput(f"{given_as} takes a group id in hex (as `tessera xmtp groups` shows it), got {text!r:.40}")
    with app.db.read():
        if len(wanted) % 2 == 0 and app.db.one(_GROUP, (bytes.fromhex(wanted),)) is not None:
            return bytes.fromhex(wanted)

        def lookup(ids: IdRange, limit: int) -> list[str]:
            return [bytes(found).hex() for (found,) in app.db.all(_GROUPS, (*ids.bytes, limit))]

        return bytes.fromhex(resolve(wanted, "group", lookup, hints.command("xmtp", "groups")))


def _round(app: App) -> tuple[int, sync.SyncReport]:
    """One publish pass and one sync: how many intents and welcomes reached the server or node, and what the
    sync did.

    ``publish_pass`` counts attempts (the tick's budget spends them, failed ones too); what was published
    is counted from the facts that say so, committed during the round."""
    published: list[str] = []
    stops = [
        app.runtime.subscribe(kind, lambda event: published.append(event.type), protocol=facts.PROTOCOL)
        for kind in (facts.INTENT_PUBLISHED, facts.WELCOME_SENT)
    ]
    try:
        report = _publish_and_sync(app.service(XmtpMember), app)
    finally:
        for stop in stops:
            stop()
    return len(published), report


def _publish_and_sync(member: XmtpMember, app: App) -> sync.SyncReport:
    if member.profile() == connection.NODE:
        publishing.publish_pass(app.runtime, member.publisher())
        return node_sync.sync_all(app.runtime, member.node())
    publisher = member.publisher()
    publishing.publish_pass(app.runtime, publisher)
    report = sync.sync_all(app.runtime, member.delivery())
    publishing.publish_pass(app.runtime, publisher)  # welcomes whose commit the sync confirmed
    return report


@click.group()
def xmtp() -> None:
    """XMTP-style groups over `tessera serve`: intents, publish, sync, welcomes."""


# --- identity ----------------------------------------------------------------------------------


@xmtp.group()
def identity() -> None:
    """This database's account and installation."""


@identity.command("new")
@click.option(
    "--node", help="An XMTP node, e.g. http://127.0.0.1:5556 (`tessera serve --xmtp-port`): speak XMTP as libxmtp does."
)
@click.option(
    "--server",
    help="Tessera's private profile instead: a delivery service, e.g. ws://127.0.0.1:8765 (`tessera serve`).",
)
@click.option("--account-key", help="An existing account key (64 hex); default: a new one.")
@json_option
@click.pass_obj
def identity_new(obj: CliState, node: str | None, server: str | None, account_key: str | None, as_json: bool) -> None:
    """Create our account and installation, register them and publish KeyPackages."""
    if (node is None) == (server is None):
        raise click.UsageError(
            "give one of --node http://HOST:PORT (XMTP) or --server ws://HOST:PORT (private profile)"
        )
    if node is not None:
        found, lines = node_cli.identity_new(obj.app(), node, account_key)
        outcome.emit(as_json, found, lines, Outcome.DONE)
        return
    assert server is not None
    if not server.startswith(connection.SCHEMES):
        raise click.BadParameter(f"{server!r} is not a ws:// or wss:// URL", param_hint="--server")
    app = obj.app()
    app.runtime.run_command("xmtp.identity_new", {"server": server, "account_key": account_key})
    with app.db.read():
        made = Vault.of(app.db).identity()
    try:
        published = keypackages.register(app.runtime, app.service(XmtpMember).delivery())
    except ServiceUnavailable as exc:
        raise ServiceUnavailable(
            f"identity {made.address} was created, but {server} could not be reached ({exc}); "
            "it registers on the next `tessera xmtp sync`"
        ) from None
    found = {"address": made.address, "installation": made.installation_id, "server": server, "key_packages": published}
    lines = [f"address {made.address}", f"installation {made.installation_id}"]
    outcome.emit(as_json, found, [*lines, f"registered with {server}: {published} KeyPackages published"], Outcome.DONE)


@identity.command("add-installation")
@click.option("--node", required=True, help="The XMTP node the account's inbox is on, e.g. http://127.0.0.1:5556.")
@click.option("--account-key", required=True, help="The account key (64 hex) of the inbox to add this database to.")
@json_option
@click.pass_obj
def identity_add_installation(obj: CliState, node: str, account_key: str, as_json: bool) -> None:
    """Make this database another installation of the account's existing inbox."""
    found, lines = node_cli.identity_add_installation(obj.app(), node, account_key)
    outcome.emit(as_json, found, lines, Outcome.DONE)


@xmtp.command()
@json_option
@click.pass_obj
def whoami(obj: CliState, as_json: bool) -> None:
    """Our address, inbox and installation, where we talk to, and our KeyPackages."""
    app = obj.app()
    with app.db.read():
        vault = Vault.of(app.db)
        if vault.has_inbox():
            found = node_cli.whoami(vault)
        else:
            me = vault.identity()
            stock = len(vault.key_package_refs())
            found = {
                "address": me.address,
                "installation": me.installation_id,
                "server": me.server,
                "key_packages": stock,
            }
    if as_json:
        click.echo(output.to_json(found))
        return
    for key, value in found.items():
        click.echo(f"{key}: {value}")


# --- groups and intents ------------------------------------------------------------------------

SHOWN_INTENTS = 10  # more than this: a count per state, and only the failed ones in full

publish_option = click.option(
    "--no-publish", is_flag=True, help="Only write the intent down; the tick daemon or `listen` publishes it."
)


def _after_intent(
    app: App, intent_ids: list[str], no_publish: bool, as_json: bool, about: dict[str, Any] | None = None
) -> None:
    """One round (unless ``no_publish``), then the intents' states; ``about``: what the command made, shown
    first (``key value`` lines) and in the JSON object."""
    if not no_publish:
        _round(app)
    with app.db.read():
        rows = [row for row in (queries.intent(app.db, intent_id) for intent_id in intent_ids) if row is not None]
    waiting = [row for row in rows if row.state is IntentState.TO_SEND]
    failed = [row for row in rows if row.state is IntentState.ERROR]
    if not as_json:
        for key, value in (about or {}).items():
            click.echo(f"{key} {value}")
        _show_intents(rows)
    reasons = [f"intent {row.id} {row.kind.name} failed: {row.error}" for row in failed[:SHOWN_INTENTS]]
    if waiting:
        why = f": {waiting[-1].error}" if waiting[-1].error else " (not tried yet)"
        count = f"{len(waiting)} intent" + ("" if len(waiting) == 1 else "s")
        reasons.append(f"queued; will retry {count} with `tessera xmtp sync` or `tessera tick`{why}")
    found = [Outcome.FAILED] * bool(failed) + [Outcome.QUEUED] * bool(waiting)
    if as_json:
        listed = [{"intent": r.id, "kind": r.kind.name, "state": r.state.name, "reason": r.error} for r in rows]
        outcome.emit(True, {**(about or {}), "intents": listed}, [], outcome.worst(found))
    outcome.finish(outcome.worst(found), reasons)


def _show_intents(rows: list[Any]) -> None:
    if len(rows) > SHOWN_INTENTS:
        states = Counter(row.state.name for row in rows)
        click.echo(
            f"{output.plural(len(rows), 'intent')}: "
            + ", ".join(f"{count} {state}" for state, count in sorted(states.items()))
        )
        rows = [row for row in rows if row.error]
    for row in rows:
        reason = f" ({row.error})" if row.error else ""
        click.echo(f"intent {row.id} {row.kind.name} {row.state.name}{reason}")


def _intent_ids(outcome: Any) -> list[str]:
    return [event.data["intent"] for event in outcome.events if event.type == facts.INTENT_CREATED]


@xmtp.command("create-group")
@click.option("--name", default="", help="A name for the group (on the node profile: in the group, as libxmtp's).")
@click.option("--description", default="", help="Node profile: the group's description, as libxmtp's.")
@click.option(
    "--permissions",
    type=click.Choice(["all-members", "admin-only", "custom"]),
    default="all-members",
    show_default=True,
    help="Node profile: libxmtp's permissions preset (who may add and remove members and change metadata); "
    "custom: all-members with the --policy options given.",
)
@click.option(
    "--policy",
    "policies",
    multiple=True,
    metavar="NAME=VALUE",
    help="With --permissions custom: one policy, as `set-permission` takes it (e.g. add_member=admin); repeatable.",
)
@json_option
@click.pass_obj
def create_group(
    obj: CliState, name: str, description: str, permissions: str, policies: tuple[str, ...], as_json: bool
) -> None:
    """A new group with only us in it; prints its id."""
    app = obj.app()
    group_id = os.urandom(16)
    params: dict[str, Any] = {"name": name, "group_id": group_id.hex()}
    with app.db.read():
        node_profile = Vault.of(app.db).has_inbox()
    if policies and permissions != "custom":
        raise click.UsageError("--policy sets the policies of --permissions custom")
    if node_profile:
        params.update(description=description, permissions=permissions, policies=node_cli.parse_policies(policies))
    elif description or permissions != "all-members":
        raise InvalidInput("--description and --permissions are the node profile's (libxmtp's groups)")
    app.runtime.run_command("xmtp.create_group", params)
    click.echo(output.to_json({"group": group_id.hex(), "name": name}) if as_json else group_id.hex())


def _members_command(command: str, help_text: str) -> click.Command:
    @click.command(command.replace("_", "-"), help=help_text)
    @click.option("--group", "group", required=True, help="Group id (hex; a unique prefix will do).")
    @click.argument("addresses", nargs=-1, required=True)
    @publish_option
    @json_option
    @click.pass_obj
    def run(obj: CliState, group: str, addresses: tuple[str, ...], no_publish: bool, as_json: bool) -> None:
        app = obj.app()
        checked = [parse_address(address) for address in addresses]
        params = {"group": _group_id(app, group).hex(), "addresses": checked}
        outcome = app.runtime.run_command(f"xmtp.{command}", params)
        _after_intent(app, _intent_ids(outcome), no_publish, as_json)

    return run


xmtp.add_command(_members_command("add_members", "Add accounts (their every installation) to a group."))
xmtp.add_command(_members_command("remove_members", "Remove accounts from a group."))


@xmtp.command()
@click.argument("address")
@publish_option
@json_option
@click.pass_obj
def dm(obj: CliState, address: str, no_publish: bool, as_json: bool) -> None:
    """The DM with ADDRESS's inbox (node profile): the one we have, whoever opened it, else a new one."""
    from protocols.xmtp.node_profile import creating as node_creating

    app = obj.app()
    group_id, peer, intent_ids = node_creating.find_or_open_dm(app.runtime, app.service(XmtpMember).node(), address)
    if not intent_ids:
        shown = {"group": group_id.hex(), "peer_inbox_id": peer, "created": False}
        outcome.emit(as_json, shown, [f"group {group_id.hex()} (our DM with {address} already)"], Outcome.DONE)
        return
    about = {"group": group_id.hex(), "peer_inbox_id": peer, "created": True}
    _after_intent(app, intent_ids, no_publish, as_json, about)


@xmtp.command("update-key")
@click.option("--group", "group", required=True, help="Group id (hex; a unique prefix will do).")
@publish_option
@json_option
@click.pass_obj
def update_key(obj: CliState, group: str, no_publish: bool, as_json: bool) -> None:
    """Refresh our own leaf's keys in a group (a commit of our own)."""
    app = obj.app()
    outcome = app.runtime.run_command("xmtp.update_key", {"group": _group_id(app, group).hex()})
    _after_intent(app, _intent_ids(outcome), no_publish, as_json)


@xmtp.command()
@click.option("--group", "group", required=True, help="Group id (hex; a unique prefix will do).")
@publish_option
@json_option
@click.pass_obj
def leave(obj: CliState, group: str, no_publish: bool, as_json: bool) -> None:
    """Node profile: ask to leave a libxmtp group (libxmtp's leave request; a super admin then removes us)."""
    app = obj.app()
    made = app.runtime.run_command("xmtp.leave", {"group": _group_id(app, group).hex()})
    _after_intent(app, _intent_ids(made), no_publish, as_json)


# --- a libxmtp group's metadata, admins and permissions (node profile) -------------------------------

_group_option = click.option("--group", "group", required=True, help="Group id (hex; a unique prefix will do).")


def _group_update(app: App, group: str, command: str, params: dict[str, Any], no_publish: bool, as_json: bool) -> None:
    """Record the intent of one change (refused before it is recorded when the group's permissions forbid it)."""
    made = app.runtime.run_command(f"xmtp.{command}", {"group": _group_id(app, group).hex(), **params})
    _after_intent(app, _intent_ids(made), no_publish, as_json)


@xmtp.command()
@_group_option
@click.argument("name")
@publish_option
@json_option
@click.pass_obj
def rename(obj: CliState, group: str, name: str, no_publish: bool, as_json: bool) -> None:
    """Set a libxmtp group's name (an intent: a commit of ours)."""
    _group_update(obj.app(), group, "update_metadata", {"field": "group_name", "value": name}, no_publish, as_json)


@xmtp.command("set-description")
@_group_option
@click.argument("text")
@publish_option
@json_option
@click.pass_obj
def set_description(obj: CliState, group: str, text: str, no_publish: bool, as_json: bool) -> None:
    """Set a libxmtp group's description (an intent: a commit of ours)."""
    _group_update(obj.app(), group, "update_metadata", {"field": "description", "value": text}, no_publish, as_json)


def _admin_command(action: str, help_text: str) -> click.Command:
    @click.command(f"{action}-admin", help=help_text)
    @_group_option
    @click.argument("address")
    @click.option("--super", "super_admin", is_flag=True, help="The super admins' list instead of the admins'.")
    @publish_option
    @json_option
    @click.pass_obj
    def run(obj: CliState, group: str, address: str, super_admin: bool, no_publish: bool, as_json: bool) -> None:
        app = obj.app()
        params = {
            "action": f"{action}_{'super_admin' if super_admin else 'admin'}",
            "inbox_id": node_cli.inbox_of(app, address),
        }
        _group_update(app, group, "update_admins", params, no_publish, as_json)

    return run


xmtp.add_command(_admin_command("add", "Make ADDRESS's inbox an admin (--super: a super admin) of a libxmtp group."))
xmtp.add_command(_admin_command("remove", "Unmake ADDRESS's inbox admin (--super: super admin) of a libxmtp group."))


@xmtp.command("set-permission")
@_group_option
@click.argument("policy")
@click.argument("value", type=click.Choice(["allow", "deny", "admin", "super_admin"]))
@publish_option
@json_option
@click.pass_obj
def set_permission(obj: CliState, group: str, policy: str, value: str, no_publish: bool, as_json: bool) -> None:
    """Set one policy of a libxmtp group: POLICY is add_member, remove_member, add_admin, remove_admin,
    update_group_name, update_group_description, update_group_image_url_square, update_message_disappearing or
    update_app_data; VALUE who may (super admins only may change policies)."""
    _group_update(obj.app(), group, "update_permission", {"policy": policy, "rule": value}, no_publish, as_json)


@xmtp.command()
@click.option("--group", "group", required=True, help="Group id (hex; a unique prefix will do).")
@click.option(
    "--react",
    nargs=2,
    metavar="MESSAGE_ID EMOJI",
    help="Node profile: react to a message (its id as `messages --json` shows it; a unique prefix will do).",
)
@click.option("--remove", is_flag=True, help="With --react: take the reaction back.")
@click.option("--reply-to", "reply_to", metavar="MESSAGE_ID", help="Node profile: TEXT is a reply to this message.")
@click.argument("texts", metavar="TEXT...", nargs=-1)
@publish_option
@json_option
@click.pass_obj
def send(
    obj: CliState,
    group: str,
    texts: tuple[str, ...],
    no_publish: bool,
    as_json: bool,
    react: tuple[str, str] | None = None,
    remove: bool = False,
    reply_to: str | None = None,
) -> None:
    """Send each TEXT to a group, in order (one message each); or a reaction (--react), or a reply (--reply-to)."""
    _checked_send(texts, react, remove, reply_to)
    app = obj.app()
    group_id = _group_id(app, group)
    group_hex = group_id.hex()
    asked: list[dict[str, Any]]
    if (react is not None or reply_to is not None) and app.service(XmtpMember).profile() != connection.NODE:
        raise NodeProfileOnly(
            "--react and --reply-to send libxmtp's reactions and replies: a database of the node profile's "
            "(`tessera xmtp identity new --node URL`) can; this one speaks Tessera's private profile"
        )
    if react is not None:
        reference = _message_id(app, group_id, react[0])
        asked = [{"react": {"reference": reference, "content": react[1], "remove": remove}}]
    elif reply_to is not None:
        asked = [{"reply_to": _message_id(app, group_id, reply_to), "text": texts[0]}]
    else:
        asked = [{"text": text} for text in texts]
    # libxmtp's check of the members' installations before a send; --no-publish stays off the network (the
    # tick's sync job checks every 30 minutes)
    made = [] if no_publish else node_cli.before_send(app, group_id)
    for params in asked:
        made += _intent_ids(app.runtime.run_command("xmtp.send", {"group": group_hex, **params}))
    _after_intent(app, made, no_publish, as_json)


def _checked_send(texts: tuple[str, ...], react: tuple[str, str] | None, remove: bool, reply_to: str | None) -> None:
    """What ``send`` was given makes one kind of message: texts, a reaction, or a reply with one text."""
    if react is not None and (texts or reply_to is not None):
        raise click.UsageError("--react sends a reaction alone: give no TEXT and no --reply-to with it")
    if remove and react is None:
        raise click.UsageError("--remove takes a reaction back: give it with --react MESSAGE_ID EMOJI")
    if reply_to is not None and len(texts) != 1:
        raise click.UsageError("--reply-to MESSAGE_ID takes one TEXT, the reply")
    if react is None and not texts:
        raise click.UsageError("give a TEXT to send (or --react MESSAGE_ID EMOJI)")


_MESSAGE = "SELECT 1 FROM xmtp_group_messages WHERE id = ? AND group_id = ?"
_MESSAGES = "SELECT id FROM xmtp_group_messages WHERE group_id = ? AND id >= ? AND id < ? ORDER BY id LIMIT ?"


def _message_id(app: App, group_id: bytes, text: str) -> str:
    """The message of ``group_id`` that ``text`` names: its whole id (hex), or a unique prefix of it."""
    wanted = text.strip().lower()
    if not wanted or any(c not in "0123456789abcdef" for c in wanted):
        raise InvalidInput(f"MESSAGE_ID is a message id in hex (as `messages --json` shows it), got {text!r:.40}")
    with app.db.read():
        if len(wanted) % 2 == 0 and app.db.one(_MESSAGE, (bytes.fromhex(wanted), group_id)) is not None:
            return wanted

        def lookup(ids: IdRange, limit: int) -> list[str]:
            return [bytes(found).hex() for (found,) in app.db.all(_MESSAGES, (group_id, *ids.bytes, limit))]

        listed_by = hints.command("xmtp", "messages", "--group", group_id.hex(), "--json")
        return resolve(wanted, "message", lookup, listed_by)


def _decide(obj: CliState, group: str, command: str, as_json: bool) -> None:
    app = obj.app()
    group_id = _group_id(app, group, "GROUP_ID")
    app.runtime.run_command(f"xmtp.{command}", {"group": group_id.hex()})
    _, report = _round(app)
    with app.db.read():
        found = queries.group(app.db, group_id)
    state = found.membership.name if found is not None else "unknown"
    result = Outcome.UNREACHABLE if report.unreachable else Outcome.DONE
    line = f"group {group_id.hex()}: {state}, {output.plural(report.processed, 'payload')} read"
    outcome.emit(as_json, {"group": group_id.hex(), "membership": state, "read": report.processed}, [line], result)
    if report.unreachable:  # decided here all the same; reading the group waits for the server
        outcome.finish(Outcome.UNREACHABLE, [f"not read: {report.failures[0]}; `tessera xmtp sync` reads it later"])


# The pending thing is positional, as in `marmot accept WELCOME_ID`; `--group G` is the old, hidden spelling.
_pending_group = click.argument("group_arg", metavar="GROUP_ID", required=False)
_old_group_option = click.option("--group", "group_opt", hidden=True, help="Old spelling of GROUP_ID.")


def _pending(group_arg: str | None, group_opt: str | None) -> str:
    if (group_arg is None) == (group_opt is None):
        raise click.UsageError("give the group's id once: GROUP_ID (as `tessera xmtp groups` shows it)")
    return group_arg or group_opt or ""


@xmtp.command()
@_pending_group
@_old_group_option
@json_option
@click.pass_obj
def accept(obj: CliState, group_arg: str | None, group_opt: str | None, as_json: bool) -> None:
    """Take part in group GROUP_ID (or a unique prefix of it) a welcome brought (then read it)."""
    _decide(obj, _pending(group_arg, group_opt), "accept", as_json)


@xmtp.command()
@_pending_group
@_old_group_option
@json_option
@click.pass_obj
def reject(obj: CliState, group_arg: str | None, group_opt: str | None, as_json: bool) -> None:
    """Decline group GROUP_ID (or a unique prefix of it) a welcome brought: its messages are not read."""
    _decide(obj, _pending(group_arg, group_opt), "reject", as_json)


# --- sync and listen ---------------------------------------------------------------------------


@xmtp.command("sync")
@json_option
@click.pass_obj
def sync_command(obj: CliState, as_json: bool) -> None:
    """Publish what waits, read every topic, keep the KeyPackage stock.

    Exits 4 when the server could not be reached, 5 when an intent still waits to be published, 1 when a
    topic could not be read to its end or a group needs a rejoin."""
    app = obj.app()
    member = app.service(XmtpMember)
    member.cold_start()
    if member.profile() == connection.NODE:
        stocked = registration.keep_stock(app.runtime, member.node())
    else:
        stocked = keypackages.keep_stock(app.runtime, member.delivery())
    published, report = _round(app)
    with app.db.read():
        stuck = queries.groups_needing_rejoin(app.db)
    with app.db.read():
        waiting = [row for row in queries.intents(app.db) if row.state is IntentState.TO_SEND]
        pending = [row for row in queries.groups(app.db) if row.membership is Membership.PENDING]
    refused = [f for f in report.failures if not any(f.startswith(f"{topic}: ") for topic in report.unreachable)]
    result = outcome.worst(
        [
            *([Outcome.QUEUED] if waiting else []),
            *([Outcome.UNREACHABLE] if report.unreachable else []),
            *([Outcome.FAILED] if stuck or refused else []),
        ]
    )
    found = {
        "published": published,
        "read": report.processed,
        "read_again": report.reread,
        "key_packages_published": stocked,
        "busy_topics": report.busy_topics,
        "failures": report.failures,
        "unreachable": report.unreachable,
        "waiting_intents": len(waiting),
        "needs_rejoin": [{"group": row.id.hex(), "reason": row.needs_rejoin} for row in stuck],
        "pending": [row.id.hex() for row in pending],
    }
    incomplete = _incomplete(stuck, refused)
    if incomplete is not None and as_json:
        fail_after_report(outcome.with_outcome(found, result), incomplete)
    outcome.emit(
        as_json,
        found,
        [_sync_line(published, report.processed, stocked), *(_pending_line(row) for row in pending)],
        result,
    )
    if incomplete is not None:
        raise incomplete
    reasons = []
    if report.unreachable:
        unread = output.plural(len(report.unreachable), "topic")
        reasons.append(f"unreachable: {unread} not read: {report.failures[0]}")
    if waiting:
        reasons.append(
            f"queued; will retry {output.plural(len(waiting), 'intent')}: {waiting[-1].error or 'not tried yet'}"
        )
    outcome.finish(result, reasons)


def _incomplete(stuck: list[queries.GroupRow], refused: list[str]) -> SyncIncomplete | None:
    """Why the sync failed (exit 1) although it reported: a group that needs a rejoin, a topic refused."""
    if stuck:
        first = stuck[0]
        more = f" (and {len(stuck) - 1} more groups: `tessera xmtp groups`)" if len(stuck) > 1 else ""
        return SyncIncomplete(f"group {first.id.hex()} needs a rejoin: {first.needs_rejoin}{more}")
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        return SyncIncomplete(f"sync did not read everything: {refused[0]}{more}")
    return None


def _pending_line(group: queries.GroupRow) -> str:
    """A group a welcome brought that waits for our answer, with the two commands that give it."""
    return _waits_line(group.id.hex(), group.name)


def _waits_line(gid: str, name: str) -> str:
    named = f" {name!r}" if name else ""
    accept, reject = hints.command("xmtp", "accept", gid), hints.command("xmtp", "reject", gid)
    return f"group {gid}{named} waits for your answer: `{accept}` joins it, `{reject}` declines it"


def _sync_line(published: int, read: int, stocked: int) -> str:
    sent = output.plural(published, "change") + " published"  # intents and welcomes the server took
    return f"{sent}, read {output.plural(read, 'payload')}, {output.plural(stocked, 'new KeyPackage')} on the server"


@xmtp.command()
@json_option
@click.pass_obj
def listen(obj: CliState, as_json: bool) -> None:
    """Stay connected and print new messages as they are read, until SIGINT or SIGTERM (--json: a JSON line per
    message).  Node profile: the node's streams wake the sync of the topic that moved; private profile: the
    server's pushes are processed as they arrive."""
    from protocols.xmtp.listen import Listener
    from protocols.xmtp.transport.websocket import WebSocketService

    app = obj.app()
    member = app.service(XmtpMember)
    if member.profile() == connection.NODE:
        _listen_to_node(app, member, as_json)
        return
    service = member.delivery(keep_pushes=True)
    if not isinstance(service, WebSocketService):
        raise InvalidInput("listen needs a ws:// server: this database's identity names another kind of service")
    printer = _NewMessages(app, as_json)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    click.echo(f"listening on {service.url} as {service.installation[:16]}...", err=True)
    report = Listener(app.runtime, service, stop, on_processed=lambda _: printer.show()).run()
    click.echo(f"stopped: {report.pushed} pushed, {report.synced} read by sync, {report.published} published", err=True)


def _listen_to_node(app: App, member: XmtpMember, as_json: bool) -> None:
    """``listen`` on the node profile: the node's streams wake the sync of the topic that moved."""
    from protocols.xmtp.node_profile.listen import NodeListener

    node = member.node()
    printer = _NewMessages(app, as_json)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with app.db.read():
        me = Vault.of(app.db).inbox()
    click.echo(f"listening on {node.url} as inbox {me.inbox_id[:16]}...", err=True)
    listener = NodeListener(
        app.runtime,
        node,
        stop,
        on_processed=lambda _: printer.show(),
        on_progress=lambda line: click.echo(line, err=True),
    )
    report = listener.run()
    click.echo(
        f"stopped: {report.woken} woken by the node, {report.synced} read by sync, {report.published} published, "
        f"{report.reconnects} reconnects",
        err=True,
    )


class _NewMessages:
    """Prints the application messages recorded since the last call, in the order they were processed."""

    def __init__(self, app: App, as_json: bool = False):
        self.app = app
        self.as_json = as_json
        with app.db.read():
            self.after = eventlog.head(app.db)

    def show(self) -> None:
        with self.app.db.read():
            recorded = list(eventlog.read_range(self.app.db, self.after))
        for event in recorded:
            self.after = event.seq
            if event.protocol != facts.PROTOCOL:
                continue
            data = event.data
            if event.type == facts.WELCOME_RECEIVED and data["membership"] == Membership.PENDING:
                click.echo(_waits_line(data["group"], data.get("name", "")), err=True)  # progress, not a message
            elif event.type == facts.MESSAGE_RECORDED and data["kind"] == MessageKind.APPLICATION:
                self._message(data)
        sys.stdout.flush()  # a pipe is block-buffered: whoever reads us sees each message as it comes

    def _message(self, data: dict[str, Any]) -> None:
        """One line (or JSON line) for an application message: a libxmtp group's (it has a content type) with
        its sender inbox and the content decoded to one line, as ``messages`` shows it."""
        encoded = facts.unb64(data["bytes"])
        found = {"group": data["group"], "sender": data["sender_address"]}
        if data.get("content_type"):
            found = {"group": data["group"], "sender": data["sender_inbox"], "content_type": data["content_type"]}
            text = node_content.describe(encoded)
        else:
            text = encoded.decode(errors="replace")
        if self.as_json:
            click.echo(output.to_json_line({**found, "text": text}))
        else:
            click.echo(f"{data['group'][:12]} {found['sender']}: {text}")


# --- listings ----------------------------------------------------------------------------------


@xmtp.command()
@json_option
@click.pass_obj
def groups(obj: CliState, as_json: bool) -> None:
    """Our groups with their membership state and epoch."""
    app = obj.app()
    with app.db.read():
        rows = queries.groups(app.db)
    listed: list[dict[str, Any]] = [
        {
            "group": row.id.hex(),
            "name": row.name,
            "membership": row.membership.name,
            "epoch": row.epoch,
            "active": row.active,
            "added_by": row.added_by,
            "needs_rejoin": row.needs_rejoin or None,
            "leave_requested": row.leave_requested,
            "removed_reason": row.removed_reason or None,
        }
        for row in rows
    ]
    _show(listed, as_json, _group_line)


@xmtp.command()
@click.option("--group", "group", required=True, help="Group id (hex; a unique prefix will do).")
@json_option
@click.pass_obj
def members(obj: CliState, group: str, as_json: bool) -> None:
    """Node profile: a libxmtp group's members (inbox ids) and metadata, as its state holds them."""
    app = obj.app()
    group_id = _group_id(app, group)
    with app.db.read():
        found = node_cli.members(app, group_id)
    if as_json:
        click.echo(output.to_json(found))
        return
    click.echo(f"name: {found['name']}")
    click.echo(f"description: {found['description']}")
    for inbox_id in found["members"]:
        role = "super admin" if inbox_id in found["super_admins"] else "admin" if inbox_id in found["admins"] else ""
        click.echo(f"{inbox_id} {role}".rstrip())


def _group_line(g: dict[str, Any]) -> str:
    named = f" {g['name']!r}" if g["name"] else ""  # a group a welcome brought has no name here
    line = f"{g['group']} {g['membership']} epoch {g['epoch']}{named}{_standing(g)}"
    return line + (f" NEEDS REJOIN: {g['needs_rejoin']}" if g["needs_rejoin"] else "")


def _standing(g: dict[str, Any]) -> str:
    """Whether we are still in the group, or asked to leave it, as ``groups`` says it."""
    if not g["active"]:
        return f" ({g['removed_reason']})" if g["removed_reason"] else " (removed)"
    return " (asked to leave)" if g["leave_requested"] else ""


@xmtp.command()
@click.option("--group", "group", required=True, help="Group id (hex; a unique prefix will do).")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000), help="Messages per page.")
@click.option("--before", help="Show messages older than this cursor (a page's next_cursor).")
@json_option
@click.pass_obj
def messages(obj: CliState, group: str, limit: int, before: str | None, as_json: bool) -> None:
    """A group's messages, newest page first (oldest first within the page)."""
    app = obj.app()
    group_id = _group_id(app, group)
    with app.db.read():
        if queries.group(app.db, group_id) is None:
            raise GroupUnknown(f"no group {group} on this database; `tessera xmtp groups` lists them")
        rows = queries.messages(app.db, group_id, limit + 1, _cursor(before))
    page, more = list(reversed(rows[:limit])), len(rows) > limit
    listed = [_message_item(row) for row in page]
    next_cursor = f"{page[0][1]}.{page[0][6]}" if more and page else None
    if as_json:
        click.echo(output.to_json({"messages": listed, "next_cursor": next_cursor, "has_more": more}))
        return
    for item in listed:
        who = item["sender"] if item["kind"] == MessageKind.APPLICATION.name else f"[{item['kind'].lower()}]"
        click.echo(f"{times.utc(item['sent_at_ns'] // 1_000_000)}  {who}: {item['text']}")
    if next_cursor:
        flags = ["--group", group_id.hex(), "--before", next_cursor, "--limit", limit]
        click.echo(f"older: `{hints.command('xmtp', 'messages', *flags)}`")


def _message_item(row: Any) -> dict[str, Any]:
    """A row of ``queries.messages`` as ``messages`` shows it; a libxmtp group's (it has a content type) with its
    sender inbox and content type, the content decoded to one line."""
    found = {"id": bytes(row[0]).hex(), "sent_at_ns": row[1], "kind": MessageKind(row[2]).name}
    if not row[7]:
        return {**found, "sender": row[3], "text": bytes(row[5]).decode(errors="replace")}
    described = node_content.describe(bytes(row[5]))
    return {**found, "sender": row[8], "sender_inbox_id": row[8], "content_type": row[7], "text": described}


def _cursor(text: str | None) -> tuple[int, str] | None:
    if text is None:
        return None
    timestamp, _, server_id = text.partition(".")
    try:
        if not server_id.isalnum():
            raise ValueError(server_id)
        return int(timestamp), server_id
    except ValueError:
        raise InvalidInput(
            f"--before takes a cursor a page printed (e.g. 1795625790447000000.01M89T6AZFWKB847ND60ENYFB2), got {text!r:.60}"
        ) from None


@xmtp.command()
@json_option
@click.pass_obj
def intents(obj: CliState, as_json: bool) -> None:
    """Every change we asked for: kind, state, attempts, and why one failed."""
    app = obj.app()
    with app.db.read():
        rows = queries.intents(app.db)
    listed: list[dict[str, Any]] = [
        {
            "intent": row.id,
            "group": row.group_id.hex(),
            "kind": row.kind.name,
            "state": row.state.name,
            "attempts": row.attempts,
            "rebuilds": row.rebuilds,
            "reason": row.error,
        }
        for row in rows
    ]
    _show(
        listed,
        as_json,
        lambda i: (
            f"{i['intent']} {i['kind']} {i['state']} attempts {i['attempts']} group {i['group'][:12]}"
            + (f": {i['reason']}" if i["reason"] else "")
        ),
    )


def _show(listed: list[dict[str, Any]], as_json: bool, line: Callable[[dict[str, Any]], str]) -> None:
    """A listing as JSON, or one line per item."""
    if as_json:
        click.echo(output.to_json(listed))
        return
    for item in listed:
        click.echo(line(item))
