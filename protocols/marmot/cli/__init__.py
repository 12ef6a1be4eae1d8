"""``tessera marmot ...``: the ``marmot`` command group.

Its commands, one module per subject: :mod:`.local` (reading this database
and feeding it from files), :mod:`.account` (our account, KeyPackages, inbox
relays), :mod:`.groups` (creating groups and changing their members),
:mod:`.messages` (sending) and :mod:`.sync` (``sync`` and ``listen``, with
:mod:`.arrivals` saying what arrived).  The ones that speak to relays publish
at once through :mod:`.publish` and find invitees through :mod:`.invitees`;
:mod:`.support` holds the options and checks they share; :mod:`.relay` runs
a relay on this machine for development.
"""

from __future__ import annotations

import click

from protocols.marmot.cli import account, groups, local, messages, relay, sync


@click.group()
def marmot():
    """Marmot group messaging (MLS over Nostr kind-445 events)."""


for _command in (
    *local.COMMANDS,
    account.identity,
    account.whoami,
    account.key_package,
    account.inbox_relays,
    *groups.COMMANDS,
    *messages.COMMANDS,
    sync.sync,
    sync.listen,
    relay.relay,
):
    marmot.add_command(_command)
