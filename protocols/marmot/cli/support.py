"""What the ``tessera marmot`` commands share: reading ids, keys and relays from arguments, and printing."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import click

from core import contract
from core.errors import InvalidInput
from jobs import hints, output
from jobs.cli_options import json_option
from protocols.marmot.cli import ids
from protocols.marmot.errors import GroupNotFound
from protocols.marmot.read import queries
from protocols.marmot.relays import normalise_relay_url
from protocols.marmot.wire import nip19

__all__ = ["json_option"]  # the shared --json (one home: jobs.cli_options), re-exported for the marmot commands

# What click's option decorators do: take a command function, return it with one more option.
OptionDecorator = Callable[[Callable[..., Any]], Callable[..., Any]]

group_option: OptionDecorator = click.option(
    "--group", "gid", required=True, help="Group id or nostr group id (hex; a unique prefix will do)."
)


def relay_option(help: str, *, required: bool = False) -> OptionDecorator:
    """A repeatable ``--relay URL`` option (``relays`` in the command), checked by :func:`relay_urls`."""
    return click.option("--relay", "relays", multiple=True, required=required, metavar="URL", help=help)


def group_id(app: contract.App, value: str) -> str:
    """The group id ``--group`` names: its MLS group id, or a ``nostr_group_id`` it uses on relays (hex), or a
    unique prefix of either (at least :data:`jobs.id_prefix.MIN_PREFIX` characters)."""
    text = value.strip().lower()
    if not text or len(text) > 128 or any(c not in "0123456789abcdef" for c in text):
        raise InvalidInput(f"--group must be a group id or nostr group id in hex (or its start), got {value!r}")
    return ids.group(app, text)


def joined_group(app: contract.App, value: str) -> str:
    """:func:`group_id`, refused with :class:`GroupNotFound` unless this database joined that group."""
    gid = group_id(app, value)
    if not any(g["group"] == gid for g in queries.groups(app.db)):
        raise GroupNotFound(f"no joined marmot group {gid}; `tessera marmot groups` lists them")
    return gid


def public_keys(values: Iterable[str]) -> list[str]:
    """Public keys given as ``npub1...`` or hex, as lowercase hex, each once, in the order given."""
    return list(dict.fromkeys(nip19.public_key_hex(value) for value in values))


def relay_urls(values: Iterable[str]) -> list[str]:
    """Relay addresses from ``--relay`` flags, checked and normalised, each once (may be empty)."""
    return list(dict.fromkeys(normalise_relay_url(value) for value in values))


def message_id(app: contract.App, gid: str, value: str) -> str:
    """A message (rumor) id of group ``gid``: whole (64 hex characters) or a unique prefix, as ``history``
    prints them."""
    return ids.message(app, gid, value)


def short_key(pubkey: str) -> str:
    """A public key as people recognise it in a line of text: the start of its npub."""
    return nip19.npub(pubkey)[:16]


def emit(as_json: bool, value: object, lines: Iterable[str]) -> None:
    """Print ``value`` as JSON, or ``lines`` as text."""
    if as_json:
        click.echo(output.to_json(value, ensure_ascii=False))
        return
    for line in lines:
        click.echo(hints.pasteable(line))
