"""The XMTP node's read models, from its facts (:mod:`.commands`): what the RPCs read.

Every handler is idempotent (rows carry the ids the facts carry; the daily count carries the seq it was
last raised at), so a rebuild (``tessera rebuild``) ends where the live tables are.
"""

from __future__ import annotations

import base64

from core import contract
from core.records import StoredEvent
from projectors import Projector
from protocols.sovereign.commands import PROTOCOL
from protocols.sovereign.xmtp_node.commands import (
    COMMIT_LOGGED,
    DAY_NS,
    GROUP_MESSAGE_STORED,
    GROUP_MESSAGES_EXPIRED,
    IDENTITY_UPDATED,
    KEY_PACKAGE_UPLOADED,
    WELCOME_STORED,
    WELCOMES_EXPIRED,
)


def _bytes(value: str) -> bytes:
    return base64.b64decode(value)


def _group_message_stored(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    group_id = bytes.fromhex(event.partition_key)
    conn.execute(
        "INSERT INTO sovereign_xmtp_group_messages(id, group_id, created_ns, data, sender_hmac, should_push, "
        "is_commit, epoch, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
        (
            data["id"],
            group_id,
            data["created_ns"],
            _bytes(data["data"]),
            _bytes(data["sender_hmac"]),
            int(data["should_push"]),
            int(data["is_commit"]),
            data["epoch"],
            event.event_id,
        ),
    )
    if not data["is_commit"]:
        conn.execute(
            "INSERT INTO sovereign_xmtp_daily_counts(group_id, day, messages, last_seq) VALUES (?, ?, 1, ?) "
            "ON CONFLICT(group_id, day) DO UPDATE SET messages = messages + 1, last_seq = excluded.last_seq "
            "WHERE sovereign_xmtp_daily_counts.last_seq < excluded.last_seq",
            (group_id, data["created_ns"] // DAY_NS, event.seq),
        )


def _welcome_stored(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    conn.execute(
        "INSERT INTO sovereign_xmtp_welcomes(id, installation_key, created_ns, kind, data, hpke_public_key, "
        "wrapper_algorithm, welcome_metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
        (
            data["id"],
            bytes.fromhex(event.partition_key),
            data["created_ns"],
            data["kind"],
            _bytes(data["data"]),
            _bytes(data["hpke_public_key"]),
            data["wrapper_algorithm"],
            _bytes(data["welcome_metadata"]),
        ),
    )


def _key_package_uploaded(conn: contract.Connection, event: StoredEvent) -> None:
    """The latest upload replaces the installation's earlier KeyPackage (facts are applied in log order)."""
    data = event.data
    conn.execute(
        "INSERT INTO sovereign_xmtp_key_packages(installation_key, inbox_id, key_package, not_after, uploaded_ns) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT(installation_key) DO UPDATE SET inbox_id = excluded.inbox_id, "
        "key_package = excluded.key_package, not_after = excluded.not_after, uploaded_ns = excluded.uploaded_ns "
        "WHERE excluded.uploaded_ns >= sovereign_xmtp_key_packages.uploaded_ns",
        (
            bytes.fromhex(event.partition_key),
            data["inbox_id"],
            _bytes(data["key_package"]),
            data["not_after"],
            data["uploaded_ns"],
        ),
    )


def _identity_updated(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    inbox_id = event.partition_key
    conn.execute(
        "INSERT INTO sovereign_xmtp_identity_updates(inbox_id, sequence_id, server_timestamp_ns, identity_update) "
        "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (inbox_id, data["sequence_id"], data["server_timestamp_ns"], _bytes(data["update"])),
    )
    # Only this inbox's own rows change (the lookup picks the latest claim among the inboxes holding an
    # identifier), so replaying inboxes in any order makes the same index.
    conn.executemany(
        "DELETE FROM sovereign_xmtp_inbox_index WHERE identifier = ? AND kind = ? AND inbox_id = ?",
        [(value, kind, inbox_id) for value, kind in data["released"]],
    )
    conn.executemany(
        "INSERT INTO sovereign_xmtp_inbox_index(identifier, kind, inbox_id, claimed_ns) VALUES (?, ?, ?, ?) "
        "ON CONFLICT DO UPDATE SET claimed_ns = excluded.claimed_ns",
        [(value, kind, inbox_id, data["server_timestamp_ns"]) for value, kind in data["claimed"]],
    )


def _commit_logged(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    conn.execute(
        "INSERT INTO sovereign_xmtp_commit_log(id, group_id, entry, signature) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(id) DO NOTHING",
        (data["id"], bytes.fromhex(event.partition_key), _bytes(data["entry"]), _bytes(data["signature"])),
    )


def _group_messages_expired(conn: contract.Connection, event: StoredEvent) -> None:
    """The rows go; so do the group's daily counts up to the newest removed message's day, which a rebuild
    (meeting those messages as tombstones) never counts.  Retention keeps at least a day, so today's count,
    the one the daily limit reads, is never among them."""
    group_id = bytes.fromhex(event.partition_key)
    conn.executemany("DELETE FROM sovereign_xmtp_group_messages WHERE id = ?", [(i,) for i in event.data["ids"]])
    conn.execute(
        "DELETE FROM sovereign_xmtp_daily_counts WHERE group_id = ? AND day <= ?",
        (group_id, event.data["through_day"]),
    )


def _welcomes_expired(conn: contract.Connection, event: StoredEvent) -> None:
    conn.executemany("DELETE FROM sovereign_xmtp_welcomes WHERE id = ?", [(i,) for i in event.data["ids"]])


XMTP_NODE = Projector(
    name="sovereign.xmtp_node",
    protocol=PROTOCOL,
    tables=(
        "sovereign_xmtp_group_messages",
        "sovereign_xmtp_daily_counts",
        "sovereign_xmtp_welcomes",
        "sovereign_xmtp_key_packages",
        "sovereign_xmtp_identity_updates",
        "sovereign_xmtp_inbox_index",
        "sovereign_xmtp_commit_log",
    ),
    handlers={
        GROUP_MESSAGE_STORED: _group_message_stored,
        WELCOME_STORED: _welcome_stored,
        KEY_PACKAGE_UPLOADED: _key_package_uploaded,
        IDENTITY_UPDATED: _identity_updated,
        COMMIT_LOGGED: _commit_logged,
        GROUP_MESSAGES_EXPIRED: _group_messages_expired,
        WELCOMES_EXPIRED: _welcomes_expired,
    },
    description="the XMTP node: group messages, welcomes, key packages, identity updates, the inbox index",
)
