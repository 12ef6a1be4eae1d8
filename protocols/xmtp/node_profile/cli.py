"""What ``tessera xmtp identity new --node``, ``identity add-installation`` and ``whoami`` do on the node profile.

The click commands live in :mod:`protocols.xmtp.cli` beside the private
profile's; these functions are their bodies.  Network work happens around the
one transaction that creates the identity: the account's inbox is looked up
first (an account that has one is given ``add-installation``), the inbox is
registered and the KeyPackage uploaded after.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from jobs import output
from protocols.xmtp.connection import XmtpMember
from protocols.xmtp.errors import ChangeRefused, IdentityExists, InboxUnknown, ServiceUnavailable, UnknownPeer
from protocols.xmtp.identity import parse_address
from protocols.xmtp.node_profile import registration
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.node import NodeService

if TYPE_CHECKING:
    from core.app import App


log = logging.getLogger("tessera.xmtp.installations")

#: What the identity commands print: their ``--json`` object, and the same as lines of text.
Shown = tuple[dict[str, Any], list[str]]


def identity_new(app: App, url: str, account_key: str | None) -> Shown:
    """Create the inbox (of the account given, or a new one) with this database as its installation."""
    _refuse_second_identity(app)
    account = registration.account_from_hex(account_key)
    if account_key:
        node = NodeService(url)
        try:
            existing = node.inbox_id_for(account.address)
        finally:
            node.close()
        if existing is not None:
            raise IdentityExists(
                f"account {account.address} already has inbox {existing} on {url}: make this database another "
                f"installation of it with `tessera xmtp identity add-installation --node {url} --account-key HEX`"
            )
    NodeService(url).close()  # the URL is checked before anything is created
    params = {"node": url, "account_key": account.private_key.hex()}
    app.runtime.run_command("xmtp.node_identity_new", params)
    return _register(app)


def identity_add_installation(app: App, url: str, account_key: str) -> Shown:
    """Make this database another installation of the account's existing inbox on the node."""
    _refuse_second_identity(app)
    account = registration.account_from_hex(account_key)
    node = NodeService(url)
    try:
        inbox_id = node.inbox_id_for(account.address)
    finally:
        node.close()
    if inbox_id is None:
        raise InboxUnknown(
            f"account {account.address} has no inbox on {url}: create one with "
            f"`tessera xmtp identity new --node {url} --account-key HEX`"
        )
    params = {"node": url, "account_key": account.private_key.hex(), "inbox_id": inbox_id}
    app.runtime.run_command("xmtp.node_identity_new", params)
    return _register(app)


def _refuse_second_identity(app: App) -> None:
    """Before any network: a database is one identity, made once."""
    with app.db.read():
        vault = Vault.of(app.db)
        if vault.has_inbox():
            raise IdentityExists(f"this database already is inbox {vault.inbox().inbox_id}; use another database")
        if vault.has_private_identity():
            old = vault.identity()
            raise IdentityExists(
                f"this database already is {old.address} in Tessera's private profile over {old.server}, which no "
                "XMTP client can reach; make a new database for XMTP (`tessera --db NEW.db init --protocol xmtp`)"
            )


def _register(app: App) -> Shown:
    with app.db.read():
        made = Vault.of(app.db).inbox()
    try:
        uploaded = registration.register(app.runtime, app.service(XmtpMember).node())
    except ServiceUnavailable as exc:
        raise ServiceUnavailable(
            f"inbox {made.inbox_id} was made here, but the node could not be reached ({exc}); it registers on "
            "the next `tessera xmtp sync` or tick"
        ) from None
    found = {
        "address": made.address,
        "inbox_id": made.inbox_id,
        "installation": made.installation_id,
        "node": made.node,
        "key_packages": uploaded,
    }
    lines = [
        f"address {made.address}",
        f"inbox {made.inbox_id}",
        f"installation {made.installation_id}",
        f"registered with {made.node}: {output.plural(uploaded, 'KeyPackage')} uploaded",
    ]
    return found, lines


def whoami(vault: Vault) -> dict[str, Any]:
    """What ``whoami`` shows of a node-profile database (inside the caller's read)."""
    me = vault.inbox()
    return {
        "address": me.address,
        "inbox_id": me.inbox_id,
        "installation": me.installation_id,
        "node": me.node,
        "key_packages": len(vault.key_package_refs()),
    }


def members(app: App, group_id: bytes) -> dict[str, Any]:
    """A libxmtp group's members and metadata from its sealed state (inside the caller's read)."""
    from protocols.xmtp.node_profile.processing import joined_group

    vault = Vault.of(app.db)
    vault.inbox()  # NodeProfileOnly on a database of the private profile
    joined = joined_group(vault, group_id)
    context = joined.context
    return {
        "group": group_id.hex(),
        "name": context.mutable.name,
        "description": context.mutable.description,
        "members": joined.member_inbox_ids(),
        "admins": sorted(context.mutable.admins),
        "super_admins": sorted(context.mutable.super_admins),
        "conversation_type": context.metadata.conversation_type.name.lower(),
        "epoch": joined.epoch,
    }


def inbox_of(app: App, address: str) -> str:
    """The inbox of ``address`` on our node (asked before any transaction); :class:`UnknownPeer` if it has none."""
    checked = parse_address(address)
    with app.db.read():
        Vault.of(app.db).inbox()  # NodeProfileOnly on a database of the private profile, before any network
    found = app.service(XmtpMember).node().inbox_id_for(checked)
    if found is None:
        raise UnknownPeer(f"{checked} has no XMTP inbox on the node: its owner has to open an XMTP app first")
    return found


def before_send(app: App, group_id: bytes) -> list[str]:
    """What libxmtp does before it sends: members' installations added or revoked since the group last followed
    their inboxes are brought in by a commit of ours first (:mod:`.installations`); the intent recorded for it,
    if any.  A node that cannot be reached now, or whose identity updates do not verify, leaves it to the next
    check: the message is not held up."""
    from protocols.libraries.xmtp_mls import XmtpMlsError
    from protocols.xmtp.node_profile import installations

    with app.db.read():
        if not Vault.of(app.db).has_inbox():
            return []
    try:
        return installations.refresh(app.runtime, app.service(XmtpMember).node(), group_id)
    except (ServiceUnavailable, XmtpMlsError) as skipped:
        log.info("members' installations of group %s not checked before the send: %s", group_id.hex(), skipped)
        return []


def parse_policies(given: tuple[str, ...]) -> dict[str, str]:
    """``--policy NAME=VALUE`` options as a mapping, checked (:class:`ChangeRefused` names what is wrong)."""
    from protocols.xmtp.node_profile.group_updates import custom_policies

    found: dict[str, str] = {}
    for item in given:
        name, sign, rule = item.partition("=")
        if not sign:
            raise ChangeRefused(f"--policy takes NAME=VALUE (e.g. add_member=admin), got {item!r:.60}")
        found[name.strip()] = rule.strip()
    custom_policies(found)  # each name and rule checked before anything is made
    return found
