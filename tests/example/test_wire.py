"""The example wire decoder against hostile peers: every undecodable message is parked at once, malformed."""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from pathlib import Path

import nacl.signing
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core import drain, queues
from core.clock import ManualClock
from core.encoding import MAX_DEPTH
from core.errors import DecodeError, MalformedInput
from core.settings import Settings
from protocols import example
from protocols.example import handlers, wire
from tests import strategies as hostile
from tests.helpers import field_root, open_test_app

KEY = nacl.signing.SigningKey(b"\x07" * 32)
AUTHOR = KEY.verify_key.encode().hex()
FIELDS = ("kind", "room", "author", "ts", "body", "id", "sig")
VALID = {"kind": "post", "room": "lobby", "author": AUTHOR, "ts": 1_700_000_000_000, "body": "hello"}


def hostile_message(field: str, fragment: str) -> bytes:
    """A message whose ``field`` holds the JSON text ``fragment``, signed over it whenever the value can be
    hashed at all: a hostile peer signs what it sends, so a signature check is no defence."""
    texts = {name: json.dumps(value) for name, value in VALID.items()}
    texts[field] = fragment
    texts["id"], texts["sig"] = _signature(texts)
    if field in ("id", "sig"):
        texts[field] = fragment
    return ("{" + ",".join(f'"{name}":{text}' for name, text in texts.items()) + "}").encode()


def _signature(texts: dict[str, str]) -> tuple[str, str]:
    try:
        parts = [json.loads(texts[name]) for name in ("kind", "room", "author", "ts", "body")]
        content = json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (ValueError, RecursionError):
        return json.dumps("00" * 32), json.dumps("00" * 64)
    mid = hashlib.sha256(content).hexdigest()
    return json.dumps(mid), json.dumps(KEY.sign(bytes.fromhex(mid)).signature.hex())


def is_valid_value(field: str, value: object) -> bool:
    checks = {
        "kind": lambda v: v in wire.KINDS,
        "room": lambda v: isinstance(v, str) and 1 <= len(v) <= 64,
        "author": lambda v: isinstance(v, str) and len(v) == 64,
        "id": lambda v: isinstance(v, str) and len(v) == 64,
        "sig": lambda v: isinstance(v, str) and len(v) == 128,
        "ts": lambda v: type(v) is int and v >= 0,
        "body": lambda v: isinstance(v, str) and len(v) <= wire.MAX_BODY,
    }
    return checks[field](value)


def test_a_valid_message_decodes():
    blob = hostile_message("body", json.dumps("hello"))
    assert handlers.decode(blob).payload["body"] == "hello"


@settings(max_examples=400)
@given(st.sampled_from(FIELDS), hostile.hostile_values(MAX_DEPTH))
def test_hostile_values_are_malformed_naming_the_field(field, fragment):
    """Regression: a signed ts >= 2**63 reached the event log (OverflowError), a lone surrogate failed the id hash
    (UnicodeEncodeError) and deep nesting raised RecursionError: each was retried as a bug, with a traceback."""
    with pytest.raises(MalformedInput) as raised:
        handlers.decode(hostile_message(field, fragment))
    assert field_root(raised.value.field) == field, str(raised.value)[:300]
    assert str(raised.value).startswith(f"malformed field {field}")


@settings(max_examples=300)
@given(st.sampled_from(FIELDS), hostile.any_json_type)
def test_wrong_types_are_malformed_naming_the_field(field, fragment):
    assume(not is_valid_value(field, json.loads(fragment)))
    with pytest.raises(MalformedInput) as raised:
        handlers.decode(hostile_message(field, fragment))
    assert raised.value.field == field, str(raised.value)


@pytest.mark.parametrize(
    "blob, detail",
    [
        (b"\xff\xfe", "not a JSON object"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"kind": "post"}', "expected exactly the fields"),
    ],
)
def test_messages_that_are_not_one_object_are_malformed_input(blob, detail):
    with pytest.raises(MalformedInput, match=detail):
        handlers.decode(blob)


def test_a_wrong_signature_is_refused_but_is_not_malformed():
    blob = json.loads(hostile_message("body", json.dumps("hello")))
    blob["sig"] = "00" * 64
    with pytest.raises(DecodeError, match="signature") as raised:
        handlers.decode(json.dumps(blob).encode())
    assert not isinstance(raised.value, MalformedInput)


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


HOSTILE_ITEMS = st.lists(st.tuples(st.sampled_from(FIELDS), hostile.hostile_values(MAX_DEPTH)), min_size=1, max_size=4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTILE_ITEMS)
def test_the_tick_parks_hostile_items_at_once_without_a_traceback(items):
    good = wire.sign("post", "lobby", "still here", 1_700_000_000_000, KEY)
    blobs = [hostile_message(field, fragment) for field, fragment in items]
    records = _Records()
    logger = logging.getLogger("tessera")
    logger.addHandler(records)
    try:
        with tempfile.TemporaryDirectory() as directory:
            app = open_test_app(
                str(Path(directory) / "h.db"), Settings.load(env={}), [example], ["example"], clock=ManualClock()
            )
            try:
                with app.db.write():
                    queues.push_incoming(app.db, "example", [*blobs, good], app.clock.now_ms())
                summary = drain.run_until_idle(app.runtime, advance_clock=True)
                parked = queues.list_parked(app.db)
                deferred = app.db.value("SELECT count(*) FROM deferred")
                texts = [row[0] for row in app.db.all("SELECT json_extract(payload, '$.text') FROM events")]
            finally:
                app.close()
    finally:
        logger.removeHandler(records)
    assert summary.outcomes == {"parked": len(blobs), "handled": 1}
    assert texts == ["still here"] and deferred == 0
    for (field, _), row in zip(items, parked, strict=False):
        assert row["attempts"] == 1 and row["source"] == "incoming"
        assert row["reason"].startswith(f"MalformedInput: malformed field {field}"), row["reason"][:300]
    assert not [r for r in records.records if r.exc_info or "unexpected" in r.getMessage()]


@pytest.mark.parametrize(
    "field, fragment",
    [
        ("ts", str(2**63)),
        ("ts", "9" * 5000),
        ("room", json.dumps("lob\ud800by")),
        ("body", hostile.nested(50_000)),
        ("body", hostile.nested(MAX_DEPTH + 1, "{")),
    ],
    ids=["ts-2^63-signed", "ts-5000-digits", "room-lone-surrogate", "body-nested-50000", "body-nested-33"],
)
def test_each_hostile_kind_is_parked_on_the_first_attempt(example_app, caplog, field, fragment):
    """Regression: these were retried max_attempts times as "unexpected" errors, each logged with a traceback."""
    with example_app.db.write():
        queues.push_incoming(example_app.db, "example", [hostile_message(field, fragment)], example_app.clock.now_ms())
    with caplog.at_level(logging.DEBUG, logger="tessera"):
        summary = drain.run_until_idle(example_app.runtime, advance_clock=True)
    assert summary.outcomes == {"parked": 1}
    [row] = queues.list_parked(example_app.db)
    assert row["attempts"] == 1 and row["reason"].startswith(f"MalformedInput: malformed field {field}")
    assert example_app.db.value("SELECT count(*) FROM events") == 0
    assert not [r for r in caplog.records if r.exc_info]
