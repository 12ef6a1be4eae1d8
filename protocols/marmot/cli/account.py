"""``tessera marmot identity new``, ``whoami``, ``key-package publish`` and ``inbox-relays``: this database's account."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from core.state import ProtocolState
from jobs.output import plural
from protocols.marmot.cli.publish import publish_now, report, timeout_option
from protocols.marmot.cli.support import emit, json_option, relay_option, relay_urls
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.state import account as accounts
from protocols.marmot.state import inbox, key_packages
from protocols.marmot.wire import nip19


@click.group()
def identity() -> None:
    """This database's Marmot account: one Nostr key, which is our name in every group."""


def _read_secret_key(path: Path) -> bytes:
    text = path.read_bytes().decode("ascii", errors="replace")
    return nip19.secret_key_bytes(text)


@identity.command("new")
@click.option(
    "--secret-key-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Use the Nostr secret key in this file (nsec1... or 64 hex) instead of making a new one.",
)
@json_option
@click.pass_obj
def identity_new(obj: Any, secret_key_file: Path | None, as_json: bool) -> None:
    """Create this database's account: a Nostr key (new or imported) and the MLS identity bound to it."""
    params = {} if secret_key_file is None else {"secret_key": _read_secret_key(secret_key_file).hex()}
    event = obj.app().runtime.run_command("marmot.identity_new", params).events[0]
    pubkey = event.data["pubkey"]
    shown = {"pubkey": pubkey, "npub": nip19.npub(pubkey)}
    emit(as_json, shown, [f"created account {shown['npub']}", f"pubkey {pubkey}"])


@click.command()
@json_option
@click.pass_obj
def whoami(obj: Any, as_json: bool) -> None:
    """Show this database's account (npub and hex) and its unused KeyPackages."""
    app = obj.app()
    with app.db.read():
        state = ProtocolState(app.db, PROTOCOL)
        me = accounts.require(state)
        stock = key_packages.stock(state)
    relays = sorted({relay for kp in stock for relay in kp.relays})
    npub = nip19.npub(me.pubkey)
    shown = {"pubkey": me.pubkey, "npub": npub, "key_packages": len(stock), "relays": relays}
    on = ", ".join(relays) or "no relay"
    emit(as_json, shown, [npub, f"pubkey {me.pubkey}", f"{plural(len(stock), 'unused KeyPackage')} on {on}"])


@click.group("key-package")
def key_package() -> None:
    """Our KeyPackages: what others need to invite us to a group."""


@key_package.command("publish")
@relay_option("Relay to publish them to (repeatable).", required=True)
@click.option(
    "--count",
    default=key_packages.DEFAULT_STOCK,
    show_default=True,
    type=click.IntRange(1, key_packages.MAX_STOCK),
    help="Publish until this many unused KeyPackages are out.",
)
@click.option("--last-resort", is_flag=True, help="Mark them reusable: kept after a welcome uses them.")
@click.option("--force", is_flag=True, help="Publish even when COUNT unused ones are out already.")
@timeout_option
@json_option
@click.pass_obj
def key_package_publish(
    obj: Any, relays: tuple[str, ...], count: int, last_resort: bool, force: bool, timeout_s: int, as_json: bool
) -> None:
    """Publish KeyPackages (kind 30443) to relays, then print their event ids and the relays' answers."""
    app = obj.app()
    params = {"relays": relay_urls(relays), "count": count, "last_resort": last_resort, "force": force}
    outcome = app.runtime.run_command("marmot.key_package_publish", params)
    made = [event.data["event_id"] for event in outcome.events]
    summary = publish_now(app, timeout_s)
    lines = [f"KeyPackage {event_id}" for event_id in made] or [
        f"{plural(count, 'unused KeyPackage')} {'is' if count == 1 else 'are'} out already; --force publishes another"
    ]
    report(as_json, {"key_packages": made, "publish": summary.to_json()}, [*lines, *summary.lines()], summary)


@click.command("inbox-relays")
@timeout_option
@json_option
@click.argument("urls", nargs=-1)
@click.pass_obj
def inbox_relays(obj: Any, timeout_s: int, as_json: bool, urls: tuple[str, ...]) -> None:
    """Show where invitations to us go; with URLS, set them and publish our inbox relay list (kind 10050)."""
    app = obj.app()
    if urls:
        outcome = app.runtime.run_command("marmot.inbox_relays", {"relays": relay_urls(urls)})
        summary = publish_now(app, timeout_s) if outcome.events else None
    else:
        summary = None
    with app.db.read():
        state = ProtocolState(app.db, PROTOCOL)
        accounts.require(state)
        listed, read_from = inbox.inbox_relays(state), inbox.gift_wrap_relays(state)
    shown: dict[str, Any] = {"inbox": list(listed), "read_from": list(read_from)}
    lines = [
        f"inbox relays: {', '.join(listed) or 'none published'}",
        f"invitations read from: {', '.join(read_from) or 'no relay'}",
    ]
    if summary is not None:
        shown["publish"] = summary.to_json()
        lines += summary.lines()
    report(as_json, shown, lines, summary)
