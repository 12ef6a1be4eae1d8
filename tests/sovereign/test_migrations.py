"""A store made before the identity directory and welcome polling is brought to today's schema by
``tessera init``: migrations 001 to 004 run once, keep every row, give old welcomes their message's server
timestamp (old messages get no number in their group), point each message at its stored fact in the log (which
keeps its payload) instead of a copy, keep group ids and senders as bytes, and the result equals what schema.sql
makes on a new database."""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path

from core import eventlog
from core.clock import ManualClock
from core.db import Database
from core.records import Event
from jobs.rebuild import RebuildRequest, rebuild
from protocols import sovereign
from protocols.sovereign.commands import PROTOCOL, message_digest
from protocols.sovereign.service import Store
from schema_loader import validate
from schema_loader.apply import apply_schemas, source_for_package
from tests.helpers import open_test_app
from tests.rebuild.conftest import snapshot_tables
from tests.schema_loader.helpers import core_source, source
from tests.sovereign.server_helpers import init_database, private_message, welcome

#: protocols/sovereign/schema.sql as it was before migration 001.
BEFORE = Path(__file__).with_name("schema_before_identities.sql")
#: protocols/sovereign/schema.sql as it was before migration 005 (group and sender as hex text, created_at).
BEFORE_GROUP_BYTES = Path(__file__).with_name("schema_before_group_bytes.sql")


MESSAGE_TABLES = ("sovereign_messages", "sovereign_delivery_status", "sovereign_groups", "sovereign_daily_counts")


def sovereign_structure(db: Database) -> validate.Structure:
    names = [row[0] for row in db.all("SELECT name FROM schema_objects WHERE owner = 'sovereign' ORDER BY name")]
    return validate.structure(db.conn, names)


def old_store(path: Path, settings) -> tuple[str, str, int, bytes]:
    """A database at sovereign schema version 0 holding one welcome (and its message), as such a server left it:
    (recipient, message id, the message's server timestamp, its payload)."""
    db = Database(str(path), settings)
    try:
        current = source_for_package("sovereign", "protocols.sovereign")
        apply_schemas(db, [core_source(), source("sovereign", BEFORE.read_text(), path=current.path)])
        group, recipient, message_id, timestamp = (
            "ab" * 16,
            os.urandom(32).hex(),
            "01J0000000000000000000000A",
            1_700_000,
        )
        payload = welcome()
        digest = message_digest(group, payload)
        fact = {
            "id": message_id,
            "sender": "cd" * 32,
            "ts": timestamp,
            "payload": base64.b64encode(payload).decode("ascii"),
            "size": len(payload),
            "epoch": 0,
            "recipients": [recipient],
            "superseded": False,
        }
        with db.write():
            eventlog.append(db, PROTOCOL, [Event("welcome_stored", digest, group, 1000, fact)], 1000)
            db.execute(
                "INSERT INTO sovereign_messages(id, digest, group_id, sender_id, server_timestamp, payload, "
                "payload_size, message_type, epoch, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 2, 0, 1)",
                (message_id, digest, group, "cd" * 32, timestamp, payload, len(payload)),
            )
            db.execute(
                "INSERT INTO sovereign_welcomes(group_id, recipient_id, message_id) VALUES (?, ?, ?)",
                (group, recipient, message_id),
            )
        assert db.all("SELECT version FROM schema_versions WHERE owner = 'sovereign'") == [(0,)]
        return recipient, message_id, timestamp, payload
    finally:
        db.close()


def test_init_migrates_a_store_from_before_the_identity_directory(tmp_path, settings) -> None:
    old = tmp_path / "old.db"
    recipient, message_id, timestamp, payload = old_store(old, settings)
    init_database(old)  # `tessera init --protocol sovereign`, as an operator upgrading would run it
    fresh = tmp_path / "fresh.db"
    init_database(fresh)

    migrated, made = Database(str(old), settings), Database(str(fresh), settings)
    try:
        assert migrated.all("SELECT number, name, baseline FROM schema_migrations WHERE owner = 'sovereign'") == [
            (1, "identities_and_welcome_order", 0),
            (2, "message_sequence", 0),
            (3, "xmtp_node", 0),
            (4, "payload_once", 0),
            (5, "group_and_sender_as_bytes", 0),
        ]
        assert migrated.value("SELECT version FROM schema_versions WHERE owner = 'sovereign'") == 5
        assert sovereign_structure(migrated) == sovereign_structure(made)
        assert migrated.all("SELECT recipient_id, message_id, server_timestamp FROM sovereign_welcomes") == [
            (recipient, message_id, timestamp)
        ]
    finally:
        migrated.close()
        made.close()

    app = open_test_app(
        str(old), settings, [sovereign], ["sovereign"], clock=ManualClock(int(time.time() * 1000)), create=False
    )
    try:
        store = Store(app)
        page = store.welcomes(recipient)
        assert [(m.id, m.server_timestamp, m.sequence, m.payload) for m in page.messages] == [
            (message_id, timestamp, None, payload)
        ]
        assert store.identity_publish(recipient, "0x" + "ab" * 20, b"binding").changed
    finally:
        app.close()


def store_at_version_4(path: Path, settings, group: str, sender: str) -> tuple[str, bytes]:
    """A database at sovereign schema version 4 holding one application message of ``sender`` in ``group``, its
    fact of version 1 (the payload base64 in the JSON), as the store wrote them then: (message id, payload)."""
    db = Database(str(path), settings)
    try:
        current = source_for_package("sovereign", "protocols.sovereign")
        before = source("sovereign", BEFORE_GROUP_BYTES.read_text(), *current.migrations[:4], path=current.path)
        apply_schemas(db, [core_source(), before])
        message_id, payload = "01J0000000000000000000000B", private_message(group, size=300)
        fact = {
            "id": message_id,
            "sender": sender,
            "ts": 1_700_000,
            "payload": base64.b64encode(payload).decode("ascii"),
            "size": len(payload),
            "epoch": 0,
            "recipients": [],
            "superseded": False,
            "sequence": 1,
        }
        with db.write():
            [stored] = eventlog.append(
                db, PROTOCOL, [Event("application_stored", message_digest(group, payload), group, 1000, fact)], 1000
            )
            db.execute(
                "INSERT INTO sovereign_messages(id, seq, group_id, sender_id, server_timestamp, payload_size, "
                "message_type, epoch, created_at, sequence) VALUES (?, ?, ?, ?, ?, ?, 0, 0, 1, 1)",
                (message_id, stored.seq, group, sender, 1_700_000, len(payload)),
            )
            db.execute(
                "INSERT INTO sovereign_daily_counts(group_id, day, messages, last_seq) VALUES (?, 0, 1, ?)",
                (group, stored.seq),
            )
        assert db.value("SELECT version FROM schema_versions WHERE owner = 'sovereign'") == 4
        return message_id, payload
    finally:
        db.close()


def test_a_store_of_hex_rows_and_base64_facts_keeps_serving_them_beside_new_ones(tmp_path, settings) -> None:
    """Migration 005 turns each row's group and sender into bytes; the facts stay as they were (version 1, the
    payload in the JSON), and a page serves them beside the facts stored after (version 2, the payload as the
    body); a rebuild from both kinds of fact gives the live rows."""
    group, sender = "ab" * 16, "cd" * 32
    old = tmp_path / "old.db"
    old_id, old_payload = store_at_version_4(old, settings, group, sender)
    init_database(old)
    fresh = tmp_path / "fresh.db"
    init_database(fresh)
    migrated, made = Database(str(old), settings), Database(str(fresh), settings)
    try:
        assert migrated.value("SELECT version FROM schema_versions WHERE owner = 'sovereign'") == 5
        assert sovereign_structure(migrated) == sovereign_structure(made)
        assert migrated.all("SELECT group_id, sender_id, payload_size FROM sovereign_messages") == [
            (bytes.fromhex(group), bytes.fromhex(sender), len(old_payload))
        ]
    finally:
        migrated.close()
        made.close()

    app = open_test_app(
        str(old), settings, [sovereign], ["sovereign"], clock=ManualClock(int(time.time() * 1000)), create=False
    )
    try:
        store = Store(app)
        store.join(sender, group)
        new = store.send(sender, group, private_message(group, size=200)).message
        with app.db.read():
            facts = {e.seq: e for e in eventlog.read_range(app.db) if e.type == "application_stored"}
        assert sorted((e.version, e.body is None, "payload" in e.data) for e in facts.values()) == [
            (1, True, True),
            (2, False, False),
        ]
        page = store.history(sender, group)
        assert [(m.id, m.group_id, m.sender_id, m.payload) for m in page.messages] == [
            (old_id, group, sender, old_payload),
            (new.id, group, sender, new.payload),
        ]
        live = snapshot_tables(app, MESSAGE_TABLES)
        verdict = rebuild(RebuildRequest(app, engine="local", verify=True, workdir=tmp_path / "work"))
        assert verdict.equal, [v for v in verdict.verdicts if not v.equal]
        assert rebuild(RebuildRequest(app, engine="local", workdir=tmp_path / "work")).swapped
        assert snapshot_tables(app, MESSAGE_TABLES) == live
    finally:
        app.close()
