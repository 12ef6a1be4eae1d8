"""The store's read models: messages with their deliveries, group members, KeyPackages, the identity directory.

Every handler is idempotent (inserts ignore what exists, statuses only move
up, counters carry the seq they were last raised at).  Retention removes a
message's rows when its ``messages_expired`` fact is applied; a rebuild meets
the purged ``*_stored`` facts as tombstones, makes no rows for them and
counts them where a count was kept, so it ends where the live tables are.
"""

from __future__ import annotations

import base64
from typing import Any

from core import contract
from core.records import StoredEvent
from projectors import Projector
from protocols.libraries.delivery.records import APPLICATION, COMMIT, DELIVERED, PENDING, READ, WELCOME
from protocols.sovereign.commands import (
    DAY_MS,
    DELIVERIES_MARKED,
    IDENTITY_PUBLISHED,
    KEY_PACKAGE_CONSUMED,
    KEY_PACKAGE_PUBLISHED,
    MEMBER_JOINED,
    MEMBER_LEFT,
    MESSAGES_EXPIRED,
    PROTOCOL,
    STORED_TYPES,
)
from protocols.sovereign.stored_facts import payload_size, superseded
from protocols.sovereign.xmtp_node.projectors import XMTP_NODE


def _stored(message_type: int) -> Any:
    def apply(conn: contract.Connection, event: StoredEvent) -> None:
        data = event.data
        message_id, group = data["id"], event.partition_key
        # The payload stays in the fact, in the log: the row names that event's seq (schema.sql).  The group and
        # the sender are kept as their bytes (the fact and the wire spell them in hex).
        conn.execute(
            "INSERT INTO sovereign_messages(id, seq, group_id, sender_id, server_timestamp, payload_size, "
            "message_type, epoch, superseded, sequence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO NOTHING",
            (
                message_id,
                event.seq,
                bytes.fromhex(group),
                bytes.fromhex(data["sender"]),
                data["ts"],
                payload_size(event),
                message_type,
                data["epoch"],
                int(superseded(data)),
                data.get("sequence"),  # absent from the facts stored before the store numbered messages
            ),
        )
        conn.executemany(
            "INSERT INTO sovereign_delivery_status(message_id, recipient_id, status) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [(message_id, recipient, PENDING) for recipient in data["recipients"]],
        )
        if message_type == WELCOME:
            conn.executemany(
                "INSERT INTO sovereign_welcomes(group_id, recipient_id, message_id, server_timestamp) "
                "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [(group, recipient, message_id, data["ts"]) for recipient in data["recipients"]],
            )
        if message_type == COMMIT:
            _count_commit(conn, event, None if superseded(data) else data["epoch"] + 1)
        if message_type == APPLICATION:
            _count_day(conn, event)

    return apply


def _count_commit(conn: contract.Connection, event: StoredEvent, moved_to: int | None) -> None:
    """One more commit for the group; a winning commit moves its epoch (epochs only grow)."""
    conn.execute(
        "INSERT INTO sovereign_groups(group_id, epoch, commits, last_seq) VALUES (?, ?, 1, ?) "
        "ON CONFLICT(group_id) DO UPDATE SET commits = commits + 1, last_seq = excluded.last_seq, "
        "epoch = CASE WHEN excluded.epoch IS NULL THEN epoch ELSE max(coalesce(epoch, -1), excluded.epoch) END "
        "WHERE sovereign_groups.last_seq < excluded.last_seq",
        (event.partition_key, moved_to, event.seq),
    )


def _count_day(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute(
        "INSERT INTO sovereign_daily_counts(group_id, day, messages, last_seq) VALUES (?, ?, 1, ?) "
        "ON CONFLICT(group_id, day) DO UPDATE SET messages = messages + 1, last_seq = excluded.last_seq "
        "WHERE sovereign_daily_counts.last_seq < excluded.last_seq",
        (event.partition_key, event.created_at_ms // DAY_MS, event.seq),
    )


def _deliveries_marked(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    status, at = data["status"], data["at"]
    conn.executemany(
        "UPDATE sovereign_delivery_status SET status = max(status, ?), "
        "delivered_at = coalesce(delivered_at, ?), "
        "read_at = CASE WHEN ? = ? THEN coalesce(read_at, ?) ELSE read_at END "
        "WHERE message_id = ? AND recipient_id = ?",
        [(status, at, status, READ, at, message_id, data["recipient"]) for message_id in data["ids"]],
    )


def _messages_expired(conn: contract.Connection, event: StoredEvent) -> None:
    ids = [(message_id,) for message_id in event.data["ids"]]
    conn.executemany("DELETE FROM sovereign_delivery_status WHERE message_id = ?", ids)
    conn.executemany(
        "DELETE FROM sovereign_welcomes WHERE group_id = ? AND message_id = ?",
        [(event.partition_key, m) for (m,) in ids],
    )
    conn.executemany("DELETE FROM sovereign_messages WHERE id = ?", ids)
    if event.data.get("group_epoch") is not None:
        # A rebuild never sees the expired commits that moved the epoch; the retention fact carries it.
        conn.execute(
            "UPDATE sovereign_groups SET epoch = max(coalesce(epoch, -1), ?) WHERE group_id = ?",
            (event.data["group_epoch"], event.partition_key),
        )


MESSAGES = Projector(
    name="sovereign.messages",
    protocol=PROTOCOL,
    tables=(
        "sovereign_messages",
        "sovereign_delivery_status",
        "sovereign_groups",
        "sovereign_welcomes",
        "sovereign_daily_counts",
    ),
    handlers={
        **{name: _stored(code) for code, name in STORED_TYPES.items()},
        DELIVERIES_MARKED: _deliveries_marked,
        MESSAGES_EXPIRED: _messages_expired,
    },
    tombstone_handlers={
        STORED_TYPES[APPLICATION]: _count_day,
        STORED_TYPES[COMMIT]: lambda conn, event: _count_commit(conn, event, None),
    },
    description="stored messages, their deliveries, group epochs, welcomes and daily counts",
)


def _joined(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute(
        "INSERT INTO sovereign_group_members(group_id, user_id, joined_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (event.partition_key, event.data["installation"], event.created_at_ms // 1000),
    )


def _left(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute(
        "DELETE FROM sovereign_group_members WHERE group_id = ? AND user_id = ?",
        (event.partition_key, event.data["installation"]),
    )


MEMBERS = Projector(
    name="sovereign.members",
    protocol=PROTOCOL,
    tables=("sovereign_group_members",),
    handlers={MEMBER_JOINED: _joined, MEMBER_LEFT: _left},
    description="who is in which group",
)


def _key_package_published(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute(
        "INSERT INTO sovereign_key_packages(installation, ref, key_package, published_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        (event.partition_key, event.data["ref"], base64.b64decode(event.data["key_package"]), event.created_at_ms),
    )


def _key_package_consumed(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute(
        "DELETE FROM sovereign_key_packages WHERE installation = ? AND ref = ?",
        (event.partition_key, event.data["ref"]),
    )


KEY_PACKAGES = Projector(
    name="sovereign.key_packages",
    protocol=PROTOCOL,
    tables=("sovereign_key_packages",),
    handlers={KEY_PACKAGE_PUBLISHED: _key_package_published, KEY_PACKAGE_CONSUMED: _key_package_consumed},
    description="one-time KeyPackages per installation, until fetched",
)

# One row per installation, so a later binding replaces the earlier one; applying the same event again
# writes the same values.
_PUBLISH_BINDING = (
    "INSERT INTO sovereign_identities(address, installation, binding, published_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT(installation) DO UPDATE SET address = excluded.address, binding = excluded.binding, "
    "published_at = excluded.published_at"
)


def _identity_published(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    binding = base64.b64decode(data["binding"])
    conn.execute(_PUBLISH_BINDING, (data["address"], event.partition_key, binding, event.created_at_ms // 1000))


IDENTITIES = Projector(
    name="sovereign.identities",
    protocol=PROTOCOL,
    tables=("sovereign_identities",),
    handlers={IDENTITY_PUBLISHED: _identity_published},
    description="the identity directory: each installation's binding to its account address",
)

PROJECTORS = (MESSAGES, MEMBERS, KEY_PACKAGES, IDENTITIES, XMTP_NODE)
__all__ = ["DELIVERED", "IDENTITIES", "KEY_PACKAGES", "MEMBERS", "MESSAGES", "PROJECTORS", "XMTP_NODE"]
