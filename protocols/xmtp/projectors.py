"""The client's read models: groups, their messages, intents and outbound welcomes.

Each handler sets what its fact says (inserts ignore rows that exist,
updates write values carried in the fact, never increments), so applying a
fact twice changes nothing, and a group's rows depend only on its own facts.
"""

from __future__ import annotations

from core import contract
from core.records import StoredEvent
from projectors import Projector
from protocols.xmtp import facts
from protocols.xmtp.facts import PROTOCOL
from protocols.xmtp.kinds import IntentState, WelcomeState


def _ns(event: StoredEvent) -> int:
    return event.created_at_ms * 1_000_000


def _group(event: StoredEvent) -> bytes:
    return bytes.fromhex(event.partition_key)


def _group_created(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    conn.execute(
        "INSERT INTO xmtp_groups(id, created_at_ns, membership_state, name, epoch, added_by) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
        (
            _group(event),
            data["created_at_ns"],
            data["membership"],
            data.get("name", ""),
            data["epoch"],
            data["added_by"],
        ),
    )


def _membership_changed(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute("UPDATE xmtp_groups SET membership_state = ? WHERE id = ?", (event.data["membership"], _group(event)))


def _epoch_moved(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute("UPDATE xmtp_groups SET epoch = max(epoch, ?) WHERE id = ?", (event.data["epoch"], _group(event)))


def _deactivated(conn: contract.Connection, event: StoredEvent) -> None:
    reason = event.data.get("reason", "")  # the node profile's; the private profile's removal names no reason
    conn.execute("UPDATE xmtp_groups SET active = 0, removed_reason = ? WHERE id = ?", (reason, _group(event)))


def _readded(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    conn.execute(
        "UPDATE xmtp_groups SET active = 1, epoch = ?, name = ?, leave_requested = 0, removed_reason = '' WHERE id = ?",
        (data["epoch"], data["name"], _group(event)),
    )


def _leave_requested(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute("UPDATE xmtp_groups SET leave_requested = 1 WHERE id = ?", (_group(event),))


def _needs_rejoin(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute("UPDATE xmtp_groups SET needs_rejoin = ? WHERE id = ?", (event.data["reason"], _group(event)))


def _resumed(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute("UPDATE xmtp_groups SET needs_rejoin = '' WHERE id = ?", (_group(event),))


def _metadata_changed(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute("UPDATE xmtp_groups SET name = ? WHERE id = ?", (event.data["name"], _group(event)))


GROUPS = Projector(
    name="xmtp.groups",
    protocol=PROTOCOL,
    tables=("xmtp_groups",),
    handlers={
        facts.GROUP_CREATED: _group_created,
        facts.WELCOME_RECEIVED: _group_created,
        facts.MEMBERSHIP_CHANGED: _membership_changed,
        facts.EPOCH_MOVED: _epoch_moved,
        facts.GROUP_DEACTIVATED: _deactivated,
        facts.GROUP_READDED: _readded,
        facts.LEAVE_REQUESTED: _leave_requested,
        facts.GROUP_NEEDS_REJOIN: _needs_rejoin,
        facts.GROUP_RESUMED: _resumed,
        facts.GROUP_METADATA_CHANGED: _metadata_changed,
    },
    description="our groups: membership state, epoch, whether we are still in them and can follow them",
)


def _message_recorded(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    conn.execute(
        "INSERT INTO xmtp_group_messages(id, group_id, decrypted_message_bytes, sent_at_ns, kind, "
        "sender_installation_id, sender_wallet_address, server_id, content_type, sender_inbox_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
        (
            bytes.fromhex(data["id"]),
            _group(event),
            facts.unb64(data["bytes"]),
            data["sent_at_ns"],
            data["kind"],
            bytes.fromhex(data["sender_installation"]),
            data["sender_address"],
            data["server_id"],
            data.get("content_type", ""),  # the node profile's: '' in the private profile
            data.get("sender_inbox", ""),
        ),
    )


MESSAGES = Projector(
    name="xmtp.messages",
    protocol=PROTOCOL,
    tables=("xmtp_group_messages",),
    handlers={facts.MESSAGE_RECORDED: _message_recorded},
    order_independent=True,
    description="each group's decrypted messages and membership changes",
)


def _intent_created(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    conn.execute(
        "INSERT INTO xmtp_group_intents(id, seq, kind, group_id, request, state, updated_at_ns) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
        (
            data["intent"],
            event.seq,
            data["kind"],
            _group(event),
            data["request"].encode(),
            IntentState.TO_SEND,
            _ns(event),
        ),
    )


def _intent_prepared(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    welcomes = data["welcomes"]
    conn.execute(
        "UPDATE xmtp_group_intents SET publish_data = ?, post_commit_data = ?, message_hash = ?, epoch = ?, "
        "updated_at_ns = ? WHERE id = ?",
        (
            facts.unb64(data["payload"]),
            facts.json_bytes(welcomes) if welcomes else b"",
            bytes.fromhex(data["hash"]),
            data["epoch"],
            _ns(event),
            data["intent"],
        ),
    )
    conn.executemany(
        "INSERT INTO xmtp_outbound_welcomes(intent_id, installation, group_id, welcome, state) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        [
            (data["intent"], w["installation"], _group(event), facts.unb64(w["welcome"]), WelcomeState.PENDING)
            for w in welcomes
        ],
    )


def _intent_published(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute(
        "UPDATE xmtp_group_intents SET state = ?, server_id = ?, error = '', updated_at_ns = ? WHERE id = ? AND state = ?",
        (IntentState.PUBLISHED, event.data["server_id"], _ns(event), event.data["intent"], IntentState.TO_SEND),
    )


def _publish_failed(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    conn.execute(
        "UPDATE xmtp_group_intents SET attempts = ?, next_attempt_at_ns = ?, error = ?, updated_at_ns = ? WHERE id = ?",
        (data["attempts"], data["retry_at_ns"], data["error"], _ns(event), data["intent"]),
    )


def _intent_failed(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    conn.execute(
        "UPDATE xmtp_group_intents SET state = ?, attempts = ?, error = ?, updated_at_ns = ? WHERE id = ?",
        (IntentState.ERROR, data["attempts"], data["error"], _ns(event), data["intent"]),
    )
    conn.execute("DELETE FROM xmtp_outbound_welcomes WHERE intent_id = ?", (data["intent"],))


def _intent_committed(conn: contract.Connection, event: StoredEvent) -> None:
    intent = event.data["intent"]
    conn.execute(
        "UPDATE xmtp_group_intents SET state = ?, error = '', updated_at_ns = ? WHERE id = ?",
        (IntentState.COMMITTED, _ns(event), intent),
    )
    conn.execute(
        "UPDATE xmtp_outbound_welcomes SET state = ? WHERE intent_id = ? AND state = ?",
        (WelcomeState.READY_TO_SEND, intent, WelcomeState.PENDING),
    )


def _intent_requeued(conn: contract.Connection, event: StoredEvent) -> None:
    data = event.data
    conn.execute(
        "UPDATE xmtp_group_intents SET state = ?, publish_data = x'', post_commit_data = x'', message_hash = NULL, "
        "epoch = NULL, server_id = '', rebuilds = ?, error = ?, updated_at_ns = ? WHERE id = ?",
        (IntentState.TO_SEND, data["rebuilds"], data["reason"], _ns(event), data["intent"]),
    )
    conn.execute("DELETE FROM xmtp_outbound_welcomes WHERE intent_id = ?", (data["intent"],))


def _welcome_sent(conn: contract.Connection, event: StoredEvent) -> None:
    conn.execute(
        "UPDATE xmtp_outbound_welcomes SET state = ? WHERE intent_id = ? AND installation = ?",
        (WelcomeState.SENT, event.data["intent"], event.data["installation"]),
    )


INTENTS = Projector(
    name="xmtp.intents",
    protocol=PROTOCOL,
    tables=("xmtp_group_intents", "xmtp_outbound_welcomes"),
    handlers={
        facts.INTENT_CREATED: _intent_created,
        facts.INTENT_PREPARED: _intent_prepared,
        facts.INTENT_PUBLISHED: _intent_published,
        facts.PUBLISH_FAILED: _publish_failed,
        facts.INTENT_FAILED: _intent_failed,
        facts.INTENT_COMMITTED: _intent_committed,
        facts.INTENT_REQUEUED: _intent_requeued,
        facts.WELCOME_SENT: _welcome_sent,
    },
    description="every intent from TO_SEND to COMMITTED or ERROR, and the welcomes our commits release",
)

PROJECTORS = (GROUPS, MESSAGES, INTENTS)
