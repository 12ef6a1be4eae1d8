"""The store's operations as one object: what ``tessera serve`` (and tests, and benchmarks) call.

Each write is one plugin command, so one transaction: it is all there after
it returns, or none of it.  Reads run in one read transaction each.  A Store
uses one App, so one SQLite connection: give each thread its own.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence

from core import eventlog
from core.app import App
from core.state import ProtocolState
from protocols.libraries.delivery.frames import Direction
from protocols.libraries.delivery.records import (
    DELIVERED,
    MESSAGE_TYPES,
    PENDING,
    READ,
    HistoryPage,
    Identity,
    IdentityBinding,
    IdentityPublished,
    Membership,
    Stored,
    StoredMessage,
    StoreStats,
    message_wire_bytes,
)
from protocols.sovereign import commands, history, stored_facts
from protocols.sovereign.config import Limits
from protocols.sovereign.errors import NoKeyPackage, NotAMember, SovereignError

# PENDING in the text, not bound, so the partial index sovereign_delivery_pending counts it.
_PENDING_DELIVERIES = f"SELECT count(*) FROM sovereign_delivery_status WHERE status = {PENDING}"

_TYPE_OF = {f"{name}_stored": code for code, name in MESSAGE_TYPES.items()}
_BINDINGS_OF = (
    "SELECT installation, binding, published_at FROM sovereign_identities WHERE address = ? ORDER BY installation"
)


class Store:
    """The sovereign store on one App."""

    def __init__(self, app: App, limits: Limits | None = None):
        self.app = app
        self.limits = limits or Limits()
        # A page's messages fit in one frame of the largest message (see history's module docs).
        self.page_bytes = message_wire_bytes(self.limits.max_payload_bytes)

    # --- writes ---------------------------------------------------------------------------

    def send(self, sender: str, group_id: str, payload: bytes, *, recipient: str | None = None) -> Stored:
        """Store ``payload`` (an MLSMessage) from member ``sender``; ``recipient`` names a welcome's invitee."""
        params = {"sender": sender, "group_id": group_id, "payload": payload, "recipient": recipient}
        outcome = self.app.runtime.run_command("sovereign.store", {**params, "limits": self.limits})
        duplicate = not outcome.events
        if duplicate:  # a retry of a stored payload: answer with the message it made
            with self.app.db.read():
                earlier = eventlog.by_id(self.app.db, commands.PROTOCOL, commands.message_digest(group_id, payload))
            if earlier is None:
                raise SovereignError("the store reported this payload stored but cannot find it; report this")
            event = earlier
        else:
            [event] = outcome.events
        data = event.data
        stored = StoredMessage(
            data["id"],
            event.partition_key,
            data["sender"],
            data["ts"],
            bytes(payload),
            _TYPE_OF[event.type],
            data["epoch"],
            stored_facts.superseded(data),
            data.get("sequence"),
        )
        return Stored(stored, tuple(data["recipients"]), stored_facts.superseded(data), duplicate)

    def join(self, installation: str, group_id: str) -> Membership:
        params = {"installation": installation, "group_id": group_id, "limits": self.limits}
        outcome = self.app.runtime.run_command("sovereign.join", params)
        return Membership(installation, group_id, True, bool(outcome.events))

    def leave(self, installation: str, group_id: str) -> Membership:
        outcome = self.app.runtime.run_command("sovereign.leave", {"installation": installation, "group_id": group_id})
        return Membership(installation, group_id, False, bool(outcome.events))

    def ack(self, installation: str, message_ids: Sequence[str]) -> int:
        """Mark ``installation``'s deliveries delivered; returns how many moved (others' ids move nothing)."""
        return self._mark(installation, message_ids, DELIVERED)

    def read(self, installation: str, message_ids: Sequence[str]) -> int:
        """Mark ``installation``'s deliveries read (and so delivered); returns how many moved."""
        return self._mark(installation, message_ids, READ)

    def _mark(self, installation: str, message_ids: Sequence[str], status: int) -> int:
        params = {"installation": installation, "ids": list(message_ids), "status": status}
        outcome = self.app.runtime.run_command("sovereign.mark", params)
        return sum(len(event.data["ids"]) for event in outcome.events)

    def expire(self, message_ids: Sequence[str], reason: str) -> int:
        """Remove ``message_ids`` for good; returns how many were removed."""
        outcome = self.app.runtime.run_command("sovereign.expire", {"ids": list(message_ids), "reason": reason})
        return sum(len(event.data["ids"]) for event in outcome.events if event.type == commands.MESSAGES_EXPIRED)

    def key_package_publish(self, installation: str, key_packages: Sequence[bytes]) -> int:
        """Stock ``installation``'s KeyPackages; returns how many it holds now."""
        params = {"installation": installation, "key_packages": list(key_packages)}
        self.app.runtime.run_command("sovereign.key_package_publish", params)
        with self.app.db.read():
            held: int = self.app.db.value(
                "SELECT count(*) FROM sovereign_key_packages WHERE installation = ?", (installation,), default=0
            )
        return held

    def key_package_fetch(self, installation: str) -> bytes:
        """One of ``installation``'s KeyPackages (the oldest), consumed; NoKeyPackage when none is left."""
        commands.installation_id(installation)
        db = self.app.db
        with db.write():
            row = db.one(
                "SELECT ref, key_package FROM sovereign_key_packages WHERE installation = ? "
                "ORDER BY published_at, ref LIMIT 1",
                (installation,),
            )
            if row is None:
                raise NoKeyPackage(f"{installation[:12]}... has no KeyPackage left; ask them to publish more")
            self.app.runtime.run_command("sovereign.key_package_consume", {"installation": installation, "ref": row[0]})
        return bytes(row[1])

    def identity_publish(self, installation: str, address: str, binding: bytes) -> IdentityPublished:
        """Bind ``installation`` to account ``address`` with ``binding`` (opaque; replaces its earlier one)."""
        params = {"installation": installation, "address": address, "binding": binding, "limits": self.limits}
        outcome = self.app.runtime.run_command("sovereign.identity_publish", params)
        return IdentityPublished(commands.account_address(address), installation, bool(outcome.events))

    # --- reads ------------------------------------------------------------------------------

    def identity_fetch(self, address: str) -> Identity:
        """The bindings of ``address``'s installations, by installation id (none: an empty list).  Anyone may ask:
        the directory is public, and whoever reads it checks each binding's signature itself."""
        normalised = commands.account_address(address)
        with self.app.db.read():
            rows = self.app.db.all(_BINDINGS_OF, (normalised,))
        return Identity(normalised, [IdentityBinding(row[0], bytes(row[1]), row[2]) for row in rows])

    def welcomes(
        self, installation: str, *, cursor: str | None = None, limit: int = history.DEFAULT_LIMIT
    ) -> HistoryPage:
        """The Welcome messages stored for ``installation`` after ``cursor``, oldest first (see :mod:`.history`)."""
        commands.installation_id(installation)
        with self.app.db.read():
            return history.welcomes(self.app.db, installation, cursor, limit, self.page_bytes)

    def history(
        self,
        member: str,
        group_id: str,
        *,
        cursor: str | None = None,
        limit: int = history.DEFAULT_LIMIT,
        direction: str = Direction.BACKWARD,
    ) -> HistoryPage:
        """A page of ``group_id``'s messages for ``member`` (who must be in the group)."""
        commands.installation_id(member, "member")
        commands.group_id(group_id)
        with self.app.db.read():
            if not commands.is_member(self.app.db, member, group_id):
                raise NotAMember(f"{member[:12]}... is not a member of group {group_id[:16]}...; only members read it")
            return history.page(self.app.db, group_id, cursor, limit, direction, self.page_bytes)

    def pending(
        self, installation: str, *, after: str | None = None, limit: int = 500, max_bytes: int | None = None
    ) -> list[StoredMessage]:
        """``installation``'s pending deliveries in server order, after message id ``after`` (see :mod:`.history`)."""
        with self.app.db.read():
            return history.pending(self.app.db, installation, after, limit, max_bytes)

    def is_member(self, installation: str, group_id: str) -> bool:
        with self.app.db.read():
            return commands.is_member(self.app.db, installation, group_id)

    def recipients(self, group_id: str) -> list[str]:
        with self.app.db.read():
            return commands.members(self.app.db, group_id)

    def stats(self) -> StoreStats:
        db = self.app.db
        with db.read():
            messages = db.value("SELECT count(*) FROM sovereign_messages", default=0)
            pending = db.value(_PENDING_DELIVERIES, default=0)
            payload_bytes = commands.counters(ProtocolState(db, commands.PROTOCOL))["payload_bytes"]
        size = os.path.getsize(db.path) if os.path.exists(db.path) else 0
        return StoreStats(messages, pending, payload_bytes, size)


def payload_from_json(value: object) -> bytes:
    """A base64 payload from a JSON request."""
    if not isinstance(value, str):
        raise SovereignError("payload must be base64 text")
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        raise SovereignError("payload is not valid base64") from None
