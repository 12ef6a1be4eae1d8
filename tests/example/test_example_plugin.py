"""The example protocol end to end: decode, handlers, projectors, paging, contract."""

from __future__ import annotations

import json

import nacl.signing
import pytest

from core import drain
from core.errors import CorruptEvent, DecodeError, InvalidInput
from projectors.testkit import Blob, ProjectorContract, Run
from protocols import example
from protocols.example import handlers, queries, simulate, wire
from tests.helpers import ingest

KEY = nacl.signing.SigningKey(b"\x01" * 32)


def post(room, text, ts, key=KEY):
    return wire.sign("post", room, text, ts, key)


class TestExampleContract(ProjectorContract):
    plugins = (example,)
    protocols = ("example",)

    def items(self):
        blobs = [Blob("example", b) for b in simulate.generate(120, seed=11)]
        return [
            *blobs,
            Run(
                "example.post",
                {"room": "room-1", "text": "from a command", "secret_key": "02" * 32, "ts_ms": 1700000000500},
            ),
        ]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda m: m.update(body="tampered"), "id does not match"),
        (lambda m: m.update(sig="00" * 64), "signature does not verify"),
        (lambda m: m.update(kind="edit"), "kind must be"),
        (lambda m: m.update(ts=-5), "ts must be"),
        (lambda m: m.pop("room"), "expected exactly the fields"),
        (lambda m: m.update(author="zz" * 32), "author"),
    ],
)
def test_bad_wire_blobs_are_refused(mutate, message):
    parsed = json.loads(post("r", "hi", 5))
    mutate(parsed)
    with pytest.raises(DecodeError, match=message):
        handlers.decode(json.dumps(parsed).encode())


def test_not_json_is_refused():
    with pytest.raises(DecodeError, match="not a JSON object"):
        handlers.decode(b"\xff\xfe")


def test_delete_before_post_waits_then_applies(example_app):
    original = post("r", "to be deleted", 10)
    delete = wire.sign("delete", "r", json.loads(original)["id"], 11, KEY)
    summary = ingest(example_app, [delete, original])
    assert summary.outcomes == {"blocked": 1, "handled": 2}  # the delete: blocked, then handled on its recheck
    assert summary.rechecked == 1
    [row] = queries.page(example_app.db, "r")
    assert row["deleted"] is True
    assert example_app.db.value("SELECT count(*) FROM blocked") == 0


def test_only_the_author_may_delete(example_app):
    original = post("r", "mine", 10)
    other = nacl.signing.SigningKey(b"\x02" * 32)
    ingest(example_app, [original, wire.sign("delete", "r", json.loads(original)["id"], 11, other)])
    assert example_app.db.value("SELECT count(*) FROM parked") == 1
    assert "only the author" in example_app.db.value("SELECT reason FROM parked")
    assert queries.page(example_app.db, "r")[0]["deleted"] is False


def test_keyset_pages_never_skip_or_repeat_with_equal_timestamps(example_app):
    blobs = [post("r", f"m{n}", 1000 + n // 7) for n in range(100)]  # 7 messages per millisecond
    ingest(example_app, blobs)
    seen, before = [], None
    while True:
        page = queries.page(example_app.db, "r", before=before, limit=9)
        if not page:
            break
        seen += page
        before = (page[-1]["ts_ms"], bytes.fromhex(page[-1]["id"]))
    # Newest first; within a millisecond, the later recorded first.
    assert [r["id"] for r in seen] == [json.loads(b)["id"] for b in reversed(blobs)]


def test_a_cursor_naming_no_message_of_the_room_is_refused(example_app):
    blobs = [post("r", "one", 1000), post("elsewhere", "two", 1001)]
    ingest(example_app, blobs)
    for room, blob in (("r", blobs[1]), ("r", post("r", "never ingested", 1002))):
        with pytest.raises(InvalidInput, match="names no message of room 'r'"):
            queries.page(example_app.db, room, before=(1002, bytes.fromhex(json.loads(blob)["id"])))


def test_page_query_uses_the_index(example_app):
    plan = example_app.db.all("EXPLAIN QUERY PLAN " + queries._OLDER, ("r", 10, 1, 5))
    assert any("USING INDEX example_messages_page (room=? AND ts_ms<?)" in row[3] for row in plan), plan
    assert not any("USE TEMP B-TREE" in row[3] for row in plan)


def test_post_command_shows_at_once_and_its_echo_is_a_duplicate(example_app):
    outcome = example_app.runtime.run_command("example.post", {"room": "r", "text": "hello", "secret_key": "03" * 32})
    assert queries.page(example_app.db, "r")[0]["text"] == "hello"
    summary = drain.run_until_idle(example_app.runtime, advance_clock=True)
    from core import publish

    assert publish.publish_due(example_app.runtime) == 1  # the loopback echoes it into incoming
    summary = drain.run_until_idle(example_app.runtime, advance_clock=True)
    assert summary.outcomes == {"duplicate": 1}
    assert outcome.events[0].event_id.hex() == queries.page(example_app.db, "r")[0]["id"]


def test_room_counts_match_messages(example_app):
    ingest(example_app, simulate.generate(300, seed=5))
    for room in queries.rooms(example_app.db):
        total = example_app.db.value("SELECT count(*) FROM example_messages WHERE room = ?", (room["room"],))
        deleted = example_app.db.value("SELECT count(*) FROM example_deletions WHERE room = ?", (room["room"],))
        assert (room["messages"], room["deleted"]) == (total, deleted)


def test_a_delete_naming_a_message_of_another_room_is_parked(example_app):
    original = post("elsewhere", "not in r", 10)
    ingest(example_app, [original, wire.sign("delete", "r", json.loads(original)["id"], 11, KEY)])
    assert "is not a message of room 'r'" in example_app.db.value("SELECT reason FROM parked")
    assert example_app.db.value("SELECT count(*) FROM example_deletions") == 0


def test_forgetting_a_deleted_message_drops_its_deletion_and_a_later_delete_is_parked(example_app):
    first, second, third = post("r", "one", 10), post("r", "two", 20), post("r", "three", 30)
    delete_first = wire.sign("delete", "r", json.loads(first)["id"], 31, KEY)
    ingest(example_app, [first, second, third, delete_first])
    assert example_app.db.value("SELECT count(*) FROM example_deletions") == 1
    # Older than 25 ms are the first two; a limit of one forgets the oldest only, the deleted one.
    outcome = example_app.runtime.run_command("example.forget", {"room": "r", "before_ts_ms": 25, "limit": 1})
    assert outcome.events[0].data["deleted"] == 1
    assert [m["text"] for m in queries.page(example_app.db, "r")] == ["three", "two"]
    assert example_app.db.value("SELECT count(*) FROM example_deletions") == 0
    assert queries.rooms(example_app.db)[0] | {"last_ts_ms": 0} == {
        "room": "r",
        "messages": 2,
        "deleted": 0,
        "last_ts_ms": 0,
    }
    ingest(example_app, [wire.sign("delete", "r", json.loads(first)["id"], 32, KEY)])
    assert "was forgotten" in example_app.db.value("SELECT reason FROM parked")


def test_a_page_names_a_message_whose_payload_no_longer_decodes(example_app):
    ingest(example_app, [post("r", "fine", 10)])
    with example_app.db.write():
        example_app.db.execute("DROP TRIGGER events_no_update")
        example_app.db.execute("UPDATE events SET payload = ? WHERE event_type = 'message_posted'", (b'{"text":',))
    with pytest.raises(CorruptEvent, match=r"example/message_posted.*not UTF-8 JSON"):
        queries.page(example_app.db, "r")
