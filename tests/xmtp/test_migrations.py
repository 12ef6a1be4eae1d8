"""A client database made before migration 001 is brought to today's schema when it is opened: its messages
move to a rowid table in arrival order with the id in a unique index, none is lost, a message seen again is
still stored once, and the result has exactly the structure schema.sql makes on a new database."""

from __future__ import annotations

import os

from core.db import Database
from schema_loader import validate
from schema_loader.apply import apply_schemas, source_for_package
from tests.schema_loader.helpers import core_source, source

ROWS = [
    (os.urandom(32), b"g" * 16, f"message {n}".encode(), 1_000 + n // 2, 1, b"s" * 32, "0xabc", f"{n}")
    for n in range(6)
]


def _structure(db: Database) -> validate.Structure:
    names = [row[0] for row in db.all("SELECT name FROM schema_objects WHERE owner = 'xmtp' ORDER BY name")]
    return validate.structure(db.conn, names)


def _undone(text: str, now: str, before: str) -> str:
    """``text`` with the first ``now`` put back to ``before``; ``now`` must be there (else schema.sql moved on)."""
    assert now in text, f"schema.sql no longer has {now!r}: update this test"
    return text.replace(now, before, 1)


def _schema_before_006() -> str:
    """protocols/xmtp/schema.sql as it was before migration 006: groups without leave_requested and removed_reason."""
    text = source_for_package("xmtp", "protocols.xmtp").text
    now = (
        "    needs_rejoin        TEXT    NOT NULL DEFAULT '',\n"
        "    leave_requested     INTEGER NOT NULL DEFAULT 0,\n"
        "    removed_reason      TEXT    NOT NULL DEFAULT ''\n"
    )
    return _undone(text, now, "    needs_rejoin        TEXT    NOT NULL DEFAULT ''\n")


def _schema_before_005() -> str:
    """protocols/xmtp/schema.sql as it was before migration 005: intents of kinds 1 to 4 only."""
    text = _schema_before_006()
    now = "kind                INTEGER NOT NULL CHECK (kind BETWEEN 1 AND 8),"
    return _undone(text, now, "kind                INTEGER NOT NULL CHECK (kind IN (1, 2, 3, 4)),")


def _schema_before_004() -> str:
    """protocols/xmtp/schema.sql as it was before migration 004: messages without content type and sender
    inbox, no identity updates."""
    text = _schema_before_005()
    now = (
        "    server_id               TEXT    NOT NULL DEFAULT '',\n"
        "    content_type            TEXT    NOT NULL DEFAULT '',\n"
        "    sender_inbox_id         TEXT    NOT NULL DEFAULT ''\n"
    )
    text = _undone(text, now, "    server_id               TEXT    NOT NULL DEFAULT ''\n")
    start = text.index("CREATE TABLE xmtp_identity_updates (")
    end = text.index(") WITHOUT ROWID;", start) + len(") WITHOUT ROWID;")
    return text[:start] + text[end:]


def _schema_before_003() -> str:
    """protocols/xmtp/schema.sql as it was before migration 003: topics without sequence and gaps."""
    text = _schema_before_004()
    now = (
        "    skip_check                  TEXT    NOT NULL DEFAULT '',\n"
        "    sequence                    INTEGER,\n"
        "    gaps                        TEXT    NOT NULL DEFAULT ''\n"
    )
    return _undone(text, now, "    skip_check                  TEXT    NOT NULL DEFAULT ''\n")


def _schema_before_002() -> str:
    """protocols/xmtp/schema.sql as it was before migration 002: no needs_rejoin, epoch_starts, skip_check."""
    text = _schema_before_003()
    edits = (
        (
            "    added_by            TEXT    NOT NULL DEFAULT '',\n    needs_rejoin        TEXT    NOT NULL DEFAULT ''\n",
            "    added_by            TEXT    NOT NULL DEFAULT ''\n",
        ),
        (
            (
                "    lock_holder                 TEXT    NOT NULL DEFAULT '',\n"
                "    epoch_starts                TEXT    NOT NULL DEFAULT '',\n"
                "    skip_check                  TEXT    NOT NULL DEFAULT ''\n"
            ),
            "    lock_holder                 TEXT    NOT NULL DEFAULT ''\n",
        ),
    )
    for now, then in edits:
        text = _undone(text, now, then)
    return text


def _schema_before_001() -> str:
    """protocols/xmtp/schema.sql as it was before migration 001: the messages keyed by their id, WITHOUT ROWID."""
    text = _schema_before_002()
    start = text.index("CREATE TABLE xmtp_group_messages (")
    end = text.index(");", start) + 2
    table = text[start:end]
    edits = (
        ("id                      BLOB    NOT NULL,", "id                      BLOB    PRIMARY KEY NOT NULL,"),
        ("    UNIQUE INDEX xmtp_group_messages_by_id (id)\n", ""),
        (");", ") WITHOUT ROWID;"),
    )
    for now, then in edits:
        assert now in table, f"schema.sql's messages table no longer has {now!r}: update this test"
        table = table.replace(now, then, 1)
    return text[:start] + table + text[end:]


def _apply(db: Database, text: str | None = None, migrated: int = 0) -> None:
    """Apply today's schema, or ``text`` as a database would hold it after the first ``migrated`` migrations."""
    current = source_for_package("xmtp", "protocols.xmtp")
    owner = current if text is None else source("xmtp", text, *current.migrations[:migrated], path=current.path)
    apply_schemas(db, [core_source(), owner])


def test_opening_an_old_client_database_moves_its_messages_to_arrival_order(tmp_path, settings) -> None:
    old, fresh = Database(str(tmp_path / "old.db"), settings), Database(str(tmp_path / "fresh.db"), settings)
    try:
        _apply(old, _schema_before_001())
        with old.write():
            for row in ROWS:
                old.execute(
                    "INSERT INTO xmtp_group_messages(id, group_id, decrypted_message_bytes, sent_at_ns, kind, "
                    "sender_installation_id, sender_wallet_address, server_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
        _apply(old)
        _apply(fresh)
        assert old.all("SELECT number, name FROM schema_migrations WHERE owner = 'xmtp' ORDER BY number") == [
            (1, "messages_in_arrival_order"),
            (2, "rereading_and_rejoin"),
            (3, "message_sequence"),
            (4, "node_profile"),
            (5, "group_update_intents"),
            (6, "leaving"),
        ]
        assert _structure(old) == _structure(fresh)
        with old.write():
            found = old.all("SELECT * FROM xmtp_group_messages ORDER BY group_id, sent_at_ns, server_id")
            assert [tuple(bytes(v) if isinstance(v, bytes) else v for v in r) for r in found] == [
                (*row, "", "")
                for row in ROWS  # the node profile's content type and sender inbox (004)
            ]
            old.execute(
                "INSERT INTO xmtp_group_messages(id, group_id, decrypted_message_bytes, sent_at_ns, kind, "
                "sender_installation_id, sender_wallet_address, server_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO NOTHING",
                ROWS[0],
            )
            assert old.value("SELECT count(*) FROM xmtp_group_messages") == len(ROWS)
        plan = " ".join(
            str(r[-1])
            for r in old.all("EXPLAIN QUERY PLAN SELECT 1 FROM xmtp_group_messages WHERE id = ?", (ROWS[0][0],))
        )
        assert "xmtp_group_messages_by_id" in plan
    finally:
        old.close()
        fresh.close()


def test_opening_a_client_database_before_002_adds_the_rejoin_and_rereading_columns(tmp_path, settings) -> None:
    """Groups and topics of a database made before migration 002 keep their rows: no group needs a rejoin,
    and no topic knows where its epochs started (it reads again from the start of history when it must)."""
    old, fresh = Database(str(tmp_path / "old.db"), settings), Database(str(tmp_path / "fresh.db"), settings)
    try:
        _apply(old, _schema_before_002())
        with old.write():
            old.execute(
                "INSERT INTO xmtp_groups(id, created_at_ns, membership_state, epoch) VALUES (?, 1, 1, 3)", (b"g" * 16,)
            )
            old.execute("INSERT INTO xmtp_topic_refresh_state(topic, cursor) VALUES ('g/67', '1.X')")
        _apply(old)
        _apply(fresh)
        assert _structure(old) == _structure(fresh)
        assert old.all("SELECT epoch, needs_rejoin FROM xmtp_groups") == [(3, "")]
        assert old.all("SELECT cursor, epoch_starts, skip_check FROM xmtp_topic_refresh_state") == [("1.X", "", "")]
    finally:
        old.close()
        fresh.close()


def test_opening_a_client_database_before_003_keeps_its_cursors_with_no_number_known(tmp_path, settings) -> None:
    """A topic synced before migration 003 keeps its cursor and knows no server number for it: the next
    message read starts the count."""
    old, fresh = Database(str(tmp_path / "old.db"), settings), Database(str(tmp_path / "fresh.db"), settings)
    try:
        _apply(old, _schema_before_003(), migrated=2)
        with old.write():
            old.execute(
                "INSERT INTO xmtp_topic_refresh_state(topic, cursor, epoch_starts) VALUES ('g/67', '1.X', '{\"3\": \"1.X\"}')"
            )
        _apply(old)
        _apply(fresh)
        assert _structure(old) == _structure(fresh)
        assert old.all("SELECT cursor, epoch_starts, sequence, gaps FROM xmtp_topic_refresh_state") == [
            ("1.X", '{"3": "1.X"}', None, "")
        ]
    finally:
        old.close()
        fresh.close()


def test_opening_a_client_database_before_004_keeps_its_messages_and_adds_the_node_profiles_columns(
    tmp_path, settings
) -> None:
    """Messages stored before migration 004 keep their rows with no content type or sender inbox, and the
    identity-update table the node profile keeps is made."""
    old, fresh = Database(str(tmp_path / "old.db"), settings), Database(str(tmp_path / "fresh.db"), settings)
    try:
        _apply(old, _schema_before_004(), migrated=3)
        with old.write():
            old.execute(
                "INSERT INTO xmtp_group_messages(id, group_id, decrypted_message_bytes, sent_at_ns, kind, "
                "sender_installation_id, sender_wallet_address, server_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                ROWS[0],
            )
        _apply(old)
        _apply(fresh)
        assert _structure(old) == _structure(fresh)
        assert old.all("SELECT server_id, content_type, sender_inbox_id FROM xmtp_group_messages") == [("0", "", "")]
        assert old.value("SELECT count(*) FROM xmtp_identity_updates") == 0
    finally:
        old.close()
        fresh.close()


def test_opening_a_client_database_before_005_keeps_its_intents_and_takes_the_group_update_kinds(
    tmp_path, settings
) -> None:
    """Intents recorded before migration 005 keep their rows, and the table takes the node profile's kinds
    5 to 8 (metadata, admin list, permissions, installations) afterwards."""
    old, fresh = Database(str(tmp_path / "old.db"), settings), Database(str(tmp_path / "fresh.db"), settings)
    insert = (
        "INSERT INTO xmtp_group_intents(id, seq, kind, group_id, request, state, attempts, error, updated_at_ns) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    try:
        _apply(old, _schema_before_005(), migrated=4)
        with old.write():
            old.execute(insert, ("a1", 7, 4, b"g" * 16, b"{}", 4, 2, "refused", 5))
        _apply(old)
        _apply(fresh)
        assert _structure(old) == _structure(fresh)
        with old.write():
            old.execute(insert, ("b2", 8, 7, b"g" * 16, b"{}", 1, 0, "", 6))
            found = old.all("SELECT id, seq, kind, state, attempts, error FROM xmtp_group_intents ORDER BY seq")
        assert found == [("a1", 7, 4, 4, 2, "refused"), ("b2", 8, 7, 1, 0, "")]
    finally:
        old.close()
        fresh.close()


def test_opening_a_client_database_before_006_keeps_its_groups_neither_leaving_nor_removed_for_a_reason(
    tmp_path, settings
) -> None:
    """Groups recorded before migration 006 keep their rows, with no leave asked and no reason for a removal."""
    old, fresh = Database(str(tmp_path / "old.db"), settings), Database(str(tmp_path / "fresh.db"), settings)
    try:
        _apply(old, _schema_before_006(), migrated=5)
        with old.write():
            old.execute(
                "INSERT INTO xmtp_groups(id, created_at_ns, membership_state, active) VALUES (?, ?, ?, ?)",
                (b"g" * 16, 5, 1, 0),
            )
        _apply(old)
        _apply(fresh)
        assert _structure(old) == _structure(fresh)
        with old.read():
            found = old.all("SELECT active, leave_requested, removed_reason FROM xmtp_groups")
        assert found == [(0, 0, "")]
    finally:
        old.close()
        fresh.close()
