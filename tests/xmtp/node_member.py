"""A Tessera XMTP member of the node profile, driven through the App's commands and the tick's own passes.

What the tick daemon does on each pass (``xmtp_key_packages``, ``xmtp_publish``,
``xmtp_sync``) is :meth:`NodeMember.tick`; the commands are the ones the CLI
runs.  Used by the interop tests and by ``python -m tests.xmtp.interop``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import attrs

from core.app import App
from protocols.libraries.xmtp_content import codecs
from protocols.xmtp import publishing, queries
from protocols.xmtp.connection import XmtpMember
from protocols.xmtp.kinds import IntentState, Membership
from protocols.xmtp.node_profile import cli as node_cli
from protocols.xmtp.node_profile import content, installations, leaving, registration
from protocols.xmtp.node_profile import sync as node_sync
from protocols.xmtp.node_profile.processing import joined_group
from protocols.xmtp.state import Vault
from protocols.xmtp.sync import SyncReport


@attrs.frozen
class Shown:
    """A message as the member's read model holds it."""

    sender_inbox_id: str
    content_type: str
    text: str
    message_id: str


@attrs.define
class NodeMember:
    """One Tessera database speaking XMTP through a node."""

    app: App

    @classmethod
    def create(cls, app: App, node_url: str, **params: Any) -> NodeMember:
        app.runtime.run_command("xmtp.node_identity_new", {"node": node_url, **params})
        member = cls(app)
        registration.register(app.runtime, member.service.node())
        return member

    @property
    def service(self) -> XmtpMember:
        return self.app.service(XmtpMember)

    @property
    def inbox_id(self) -> str:
        with self.app.db.read():
            return Vault.of(self.app.db).inbox().inbox_id

    def another_installation(self, app: App) -> NodeMember:
        """A new database ``app`` made another installation of this member's inbox, registered."""
        with self.app.db.read():
            inbox = Vault.of(self.app.db).inbox()
        params = {"account_key": inbox.account_key.hex(), "inbox_id": inbox.inbox_id}
        return NodeMember.create(app, inbox.node, **params)

    @property
    def installation_id(self) -> str:
        with self.app.db.read():
            return Vault.of(self.app.db).inbox().installation_id

    @property
    def address(self) -> str:
        with self.app.db.read():
            return Vault.of(self.app.db).inbox().address

    def tick(self) -> SyncReport:
        """One pass of the tick's XMTP jobs: KeyPackages, publish, sync (then the members' installations, when
        their last check is 30 minutes old; then the removal of members that asked to leave, when we are a super
        admin)."""
        node = self.service.node()
        registration.keep_stock(self.app.runtime, node)
        publishing.publish_pass(self.app.runtime, self.service.publisher())
        report = node_sync.sync_all(self.app.runtime, node)
        installations.follow_all(self.app.runtime, node)
        leaving.remove_all(self.app.runtime)
        return report

    def sync(self) -> SyncReport:
        """The sync pass alone (what ``tick`` does last)."""
        return node_sync.sync_all(self.app.runtime, self.service.node())

    def publish(self) -> int:
        """The publish pass alone."""
        return publishing.publish_pass(self.app.runtime, self.service.publisher())

    def create_group(self, name: str = "", description: str = "", permissions: str = "all-members") -> str:
        """A new libxmtp group with this member alone in it; its id (hex)."""
        group_id = os.urandom(16).hex()
        params = {"group_id": group_id, "name": name, "description": description, "permissions": permissions}
        self.app.runtime.run_command("xmtp.create_group", params)
        return group_id

    def add_members(self, group_id: str, *addresses: str) -> None:
        self.app.runtime.run_command("xmtp.add_members", {"group": group_id, "addresses": list(addresses)})

    def remove_members(self, group_id: str, *addresses: str) -> None:
        self.app.runtime.run_command("xmtp.remove_members", {"group": group_id, "addresses": list(addresses)})

    def dm(self, address: str) -> str:
        """Our DM with ``address``'s inbox (``tessera xmtp dm``): the one we have, else a new one; its id."""
        from protocols.xmtp.node_profile.creating import find_or_open_dm

        group_id, _, _ = find_or_open_dm(self.app.runtime, self.service.node(), address)
        return group_id.hex()

    def leave(self, group_id: str) -> None:
        """``tessera xmtp leave``'s command."""
        self.app.runtime.run_command("xmtp.leave", {"group": group_id})

    def group_row(self, group_id: str) -> queries.GroupRow | None:
        with self.app.db.read():
            return queries.group(self.app.db, bytes.fromhex(group_id))

    def update_key(self, group_id: str) -> None:
        self.app.runtime.run_command("xmtp.update_key", {"group": group_id})

    def epoch(self, group_id: str) -> int:
        with self.app.db.read():
            return joined_group(Vault.of(self.app.db), bytes.fromhex(group_id)).epoch

    def intent_ids(self, kind: str) -> list[str]:
        """Our intents of ``kind`` (an IntentKind name), in the order they were made."""
        with self.app.db.read():
            return [row.id for row in queries.intents(self.app.db) if row.kind.name == kind]

    def groups(self) -> dict[str, Membership]:
        with self.app.db.read():
            return {row.id.hex(): row.membership for row in queries.groups(self.app.db)}

    def active(self, group_id: str) -> bool:
        with self.app.db.read():
            found = queries.group(self.app.db, bytes.fromhex(group_id))
        return found is not None and found.active

    def accept(self, group_id: str) -> None:
        self.app.runtime.run_command("xmtp.accept", {"group": group_id})

    def reject(self, group_id: str) -> None:
        self.app.runtime.run_command("xmtp.reject", {"group": group_id})

    def send(self, group_id: str, *texts: str) -> None:
        """``tessera xmtp send``: members' installations checked first (libxmtp's check before a send), then
        one SEND_MESSAGE intent per text."""
        node_cli.before_send(self.app, bytes.fromhex(group_id))
        for text in texts:
            self.app.runtime.run_command("xmtp.send", {"group": group_id, "text": text})

    def react(self, group_id: str, message_id: str, emoji: str, *, remove: bool = False) -> None:
        """``tessera xmtp send --react MESSAGE_ID EMOJI [--remove]``'s command."""
        wanted = {"reference": message_id, "content": emoji, "remove": remove}
        self.app.runtime.run_command("xmtp.send", {"group": group_id, "react": wanted})

    def reply(self, group_id: str, message_id: str, text: str) -> None:
        """``tessera xmtp send --reply-to MESSAGE_ID TEXT``'s command."""
        self.app.runtime.run_command("xmtp.send", {"group": group_id, "reply_to": message_id, "text": text})

    def rename(self, group_id: str, name: str) -> None:
        self.update_metadata(group_id, "group_name", name)

    def set_description(self, group_id: str, text: str) -> None:
        self.update_metadata(group_id, "description", text)

    def update_metadata(self, group_id: str, field: str, value: str) -> None:
        self.app.runtime.run_command("xmtp.update_metadata", {"group": group_id, "field": field, "value": value})

    def change_admins(self, group_id: str, action: str, address: str) -> None:
        """``add-admin`` / ``remove-admin`` (``action``: add_admin, remove_admin, add_super_admin, ...)."""
        inbox_id = node_cli.inbox_of(self.app, address)
        params = {"group": group_id, "action": action, "inbox_id": inbox_id}
        self.app.runtime.run_command("xmtp.update_admins", params)

    def set_permission(self, group_id: str, policy: str, rule: str) -> None:
        params = {"group": group_id, "policy": policy, "rule": rule}
        self.app.runtime.run_command("xmtp.update_permission", params)

    def policies(self, group_id: str) -> dict[str, str]:
        """The group's policies by the names ``set-permission`` takes (libxmtp's FfiPermissionPolicySet's, less
        ``_policy``), each rule as libxmtp reports it."""
        from protocols.xmtp.node_profile.group_updates import METADATA_POLICIES, RULES

        with self.app.db.read():
            policies = joined_group(Vault.of(self.app.db), bytes.fromhex(group_id)).context.policies
        named = {rule: name for name, rule in RULES.items()}
        found = {name: getattr(policies, name) for name in ("add_member", "remove_member", "add_admin", "remove_admin")}
        found.update({name: policies.metadata_policy(fields[-1]) for name, fields in METADATA_POLICIES.items()})
        return {name: named.get(policy, "other") for name, policy in found.items()}

    def intents_of(self, kind: str) -> list[tuple[str, str]]:
        """(state, reason) of our intents of ``kind`` (an IntentKind name), in the order they were made."""
        with self.app.db.read():
            return [(row.state.name, row.error) for row in queries.intents(self.app.db) if row.kind.name == kind]

    def messages(self, group_id: str) -> list[Shown]:
        with self.app.db.read():
            rows = queries.messages(self.app.db, bytes.fromhex(group_id), 100_000)
        return [Shown(row[8], row[7], content.describe(bytes(row[5])), bytes(row[0]).hex()) for row in reversed(rows)]

    def texts(self, group_id: str) -> list[tuple[str, str]]:
        """(sender inbox, text) of the group's text messages, in the node's order."""
        return [(m.sender_inbox_id, m.text) for m in self.messages(group_id) if m.content_type == "xmtp.org/text:1.0"]

    def decoded(self, group_id: str) -> list[codecs.Content]:
        with self.app.db.read():
            rows = queries.messages(self.app.db, bytes.fromhex(group_id), 100_000)
        return [codecs.decode_bytes(bytes(row[5])) for row in reversed(rows)]

    def members(self, group_id: str) -> list[str]:
        with self.app.db.read():
            return joined_group(Vault.of(self.app.db), bytes.fromhex(group_id)).member_inbox_ids()

    def metadata(self, group_id: str) -> dict[str, Any]:
        with self.app.db.read():
            context = joined_group(Vault.of(self.app.db), bytes.fromhex(group_id)).context
            name = queries.group(self.app.db, bytes.fromhex(group_id))
        return {
            "name": context.mutable.name,
            "description": context.mutable.description,
            "admins": sorted(context.mutable.admins),
            "super_admins": sorted(context.mutable.super_admins),
            "listed_name": name.name if name is not None else None,
        }

    def identity_sequence_ids(self, inbox_id: str) -> list[int]:
        """The sequence ids of the identity updates kept of ``inbox_id``."""
        with self.app.db.read():
            rows = self.app.db.all(
                "SELECT sequence_id FROM xmtp_identity_updates WHERE inbox_id = ? ORDER BY sequence_id", (inbox_id,)
            )
        return [int(row[0]) for row in rows]

    def open_intents(self) -> list[IntentState]:
        with self.app.db.read():
            return [row.state for row in queries.intents(self.app.db) if row.state in (1, 2)]

    def events(self, kind: str) -> list[dict[str, Any]]:
        with self.app.db.read():
            rows = self.app.db.all(
                "SELECT payload FROM events WHERE protocol = 'xmtp' AND event_type = ? ORDER BY seq", (kind,)
            )
        return [json.loads(row[0]) for row in rows]
