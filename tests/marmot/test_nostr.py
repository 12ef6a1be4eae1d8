"""NIP-01 events and BIP-340 signatures: official vectors, real events, shape rules, group events."""

from __future__ import annotations

import csv
import hashlib
import json
import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from core.errors import InvalidInput
from protocols.marmot.errors import InvalidEvent, InvalidKey, MarmotError
from protocols.marmot.wire import nostr
from tests import strategies as hostile
from tests.helpers import VECTORS

BIP340_CSV = (VECTORS / "bip340-test-vectors.csv").read_text("utf-8")
BIP340_ROWS = list(csv.DictReader(BIP340_CSV.splitlines()))
EVENT_LINES = (VECTORS / "nostr-events.jsonl").read_text("utf-8").splitlines()
EVENTS = [json.loads(line) for line in EVENT_LINES]
EVENT_IDS = [f"{i:02d}-kind{e['kind']}-{e['id'][:8]}" for i, e in enumerate(EVENTS)]

SK = hashlib.sha256(b"tessera test key").digest()
GID = hashlib.sha256(b"group").hexdigest()


def _sample(**overrides) -> dict:
    event = nostr.sign_event(
        {"created_at": 1_700_000_000, "kind": 1, "tags": [["t", "x"]], "content": "hi"},
        SK,
        aux_rand=bytes(32),
    )
    event.update(overrides)
    return event


# --- BIP-340 official vectors ------------------------------------------------------


def test_bip340_file_is_complete():
    assert [int(r["index"]) for r in BIP340_ROWS] == list(range(19))


@pytest.mark.parametrize("row", BIP340_ROWS, ids=[f"row{r['index']}" for r in BIP340_ROWS])
def test_bip340_verify(row):
    result = nostr.schnorr_verify(
        bytes.fromhex(row["public key"]), bytes.fromhex(row["signature"]), bytes.fromhex(row["message"])
    )
    assert result is (row["verification result"] == "TRUE")


_SIGNING_ROWS = [r for r in BIP340_ROWS if r["secret key"] and len(r["message"]) == 64]


def test_bip340_signing_rows_present():
    assert [r["index"] for r in _SIGNING_ROWS] == ["0", "1", "2", "3"]


@pytest.mark.parametrize("row", _SIGNING_ROWS, ids=[f"row{r['index']}" for r in _SIGNING_ROWS])
def test_bip340_sign(row):
    secret = bytes.fromhex(row["secret key"])
    assert nostr.public_key_xonly(secret).hex() == row["public key"].lower()
    sig = nostr.schnorr_sign(secret, bytes.fromhex(row["message"]), bytes.fromhex(row["aux_rand"]))
    assert sig.hex() == row["signature"].lower()


# --- real events -------------------------------------------------------------------------


def test_seventeen_events():
    assert len(EVENTS) == 17


@pytest.mark.parametrize("line", EVENT_LINES, ids=EVENT_IDS)
def test_real_event_verifies(line):
    for raw in (line, line.encode("utf-8")):
        event = nostr.parse_event(raw)
        assert nostr.compute_event_id(event) == event["id"]
        assert hashlib.sha256(nostr.serialize_for_id(event)).hexdigest() == event["id"]
        nostr.verify_event(event)


_ALPHABETS = (string.digits, string.ascii_lowercase, string.ascii_uppercase)
_HEX = "0123456789abcdef"


def _other_char(c: str) -> str:
    """A different character of the same kind (digit, letter, or a code-point neighbour)."""
    for alphabet in _ALPHABETS:
        if c in alphabet:
            return alphabet[(alphabet.index(c) + 1) % len(alphabet)]
    # Flipping the lowest bit never moves a code point into or out of the surrogate block.
    return chr(ord(c) ^ 1)


def _other_hex(c: str) -> str:
    return _HEX[(_HEX.index(c) + 1) % 16]


def _replace(text: str, i: int, char: str) -> str:
    return text[:i] + char + text[i + 1 :]


def _mutations(event: dict):
    """Yield (label, mutated event, expected reason) for every one-character change we test."""
    for i, c in enumerate(event["content"]):
        content = _replace(event["content"], i, _other_char(c))
        yield f"content[{i}]", {**event, "content": content}, "id_mismatch"
    located = [(t, j) for t, tag in enumerate(event["tags"]) for j in range(1, len(tag)) if tag[j]]
    if located:
        t, j = located[0]
        value = event["tags"][t][j]
        for i, c in enumerate(value):
            tags = [list(tag) for tag in event["tags"]]
            tags[t][j] = _replace(value, i, _other_char(c))
            yield f"tags[{t}][{j}][{i}]", {**event, "tags": tags}, "id_mismatch"
    digits = str(event["created_at"])
    for i, c in enumerate(digits):
        created_at = int(_replace(digits, i, _other_char(c)))
        yield f"created_at[{i}]", {**event, "created_at": created_at}, "id_mismatch"
    for field, reason in (("pubkey", "id_mismatch"), ("id", "id_mismatch"), ("sig", "bad_signature")):
        for i, c in enumerate(event[field]):
            yield f"{field}[{i}]", {**event, field: _replace(event[field], i, _other_hex(c))}, reason


@pytest.mark.parametrize("event", EVENTS, ids=EVENT_IDS)
def test_every_single_character_mutation_is_rejected(event):
    count = 0
    for label, mutated, reason in _mutations(event):
        assert mutated != event, label
        nostr.parse_event(mutated)  # the mutation keeps the shape valid...
        with pytest.raises(InvalidEvent) as info:  # ...but not the id or signature
            nostr.verify_event(mutated)
        assert info.value.reason == reason, label
        count += 1
    assert count >= 64 + 64 + 128 + len(event["content"])


def test_mutations_cover_tags_and_escapes():
    assert sum(1 for e in EVENTS if any(len(t) > 1 for t in e["tags"])) >= 10
    contents = "".join(e["content"] for e in EVENTS)
    for char in ('"', "\\", "\n"):
        assert char in contents


def test_transport_escaping_does_not_change_the_id():
    # A relay may send "\u00e9" or "\/" instead of the raw characters; the id must not care.
    for event in EVENTS:
        escaped = json.dumps(event, ensure_ascii=True).replace("/", "\\/")
        nostr.verify_event(nostr.parse_event(escaped))


# --- shape ------------------------------------------------------------------------

_WRONG_VALUES: dict[str, list[object]] = {
    "id": [None, 1, "A" * 64, "a" * 63, "a" * 65, "g" * 64, "a" * 63 + "\n", ["a" * 64]],
    "pubkey": [None, 1, "F" * 64, "f" * 62, "0x" + "f" * 62, " " + "f" * 63],
    "sig": [None, "a" * 64, "a" * 127, "a" * 129, "A" * 128, 0],
    "created_at": [None, -1, 1.0, 1e9, True, "1700000000", 2**63, [1]],
    "kind": [None, -1, 65536, 1.0, True, False, "1", 2**70],
    "tags": [None, {}, "t", ["t"], [("t", "x")], [["t", 1]], [["t", None]], [[["t"]]], [["t", "\ud800"]]],
    "content": [None, 1, b"hi", ["hi"], {"a": "b"}, "\udfff"],
}
_SHAPE_CASES = [(f, v) for f, values in _WRONG_VALUES.items() for v in values]


@pytest.mark.parametrize("field, value", _SHAPE_CASES, ids=[f"{f}={v!r:.20}" for f, v in _SHAPE_CASES])
def test_wrong_field_value_is_shape_error(field, value):
    event = _sample(**{field: value})
    for call in (nostr.parse_event, nostr.verify_event):
        with pytest.raises(InvalidEvent) as info:
            call(event)
        assert info.value.reason == "shape"
        assert info.value.field == field
        assert field in str(info.value)


@pytest.mark.parametrize("field", nostr.EVENT_KEYS)
def test_missing_key_is_shape_error(field):
    event = _sample()
    del event[field]
    with pytest.raises(InvalidEvent) as info:
        nostr.parse_event(json.dumps(event))
    assert info.value.reason == "shape"
    assert info.value.field == field


@pytest.mark.parametrize("extra", ["extra", "Id", "", "seen_on"])
def test_extra_key_is_shape_error(extra):
    event = {**_sample(), extra: "x"}
    with pytest.raises(InvalidEvent) as info:
        nostr.parse_event(json.dumps(event))
    assert info.value.reason == "shape"
    assert info.value.field == extra


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b"[]",
        b"null",
        b'"event"',
        b"\xff\xfe{}",
        "\ufeff{}".encode("utf-8"),
        b"[" * 200_000,
        json.dumps(_sample()).encode("utf-16"),
        json.dumps(_sample()).replace('"id"', '"id":"x","id"', 1),  # duplicate key
        json.dumps(_sample()).replace("1700000000", "NaN"),
        json.dumps(_sample()).replace("1700000000", "1" * 5000),
        json.dumps(_sample()).replace('"hi"', '"\\ud800"'),
        json.dumps(_sample()).encode("utf-8").replace(b'"hi"', b'"\xed\xa0\x80"'),  # CESU surrogate
        json.dumps(_sample()) + "x",
    ],
    ids=lambda raw: repr(raw[:12]),
)
def test_malformed_raw_is_shape_error(raw):
    with pytest.raises(InvalidEvent) as info:
        nostr.parse_event(raw)
    assert info.value.reason == "shape"


def test_not_an_event_type():
    with pytest.raises(InvalidEvent):
        nostr.parse_event(42)  # type: ignore[arg-type]


def test_oversized_event():
    event = _sample(content="x" * (300 * 1024))
    raw = json.dumps(event)
    size = len(raw.encode("utf-8"))
    for candidate in (raw, raw.encode("utf-8")):
        with pytest.raises(InvalidEvent) as info:
            nostr.parse_event(candidate)
        assert info.value.reason == "shape"
        assert str(info.value) == f"malformed event: event is {size} bytes; the limit is {256 * 1024}"
    with pytest.raises(InvalidEvent) as info:
        nostr.parse_event(event)
    assert info.value.reason == "shape"
    with pytest.raises(InvalidEvent) as info:
        nostr.verify_event(event)
    assert info.value.reason == "shape"


def test_size_limit_counts_utf8_bytes_and_is_configurable():
    event = nostr.sign_event({"created_at": 1, "kind": 1, "tags": [], "content": "🦄" * 100}, SK)
    raw = json.dumps(event, ensure_ascii=False)
    size = len(raw.encode("utf-8"))
    assert nostr.parse_event(raw, max_bytes=size) == event
    with pytest.raises(InvalidEvent, match=f"event is {size} bytes; the limit is {size - 1}"):
        nostr.parse_event(raw, max_bytes=size - 1)


def test_error_classes():
    assert issubclass(InvalidEvent, MarmotError)
    assert issubclass(InvalidEvent, InvalidInput)
    with pytest.raises(ValueError):
        InvalidEvent("x", reason="no such reason")


# --- canonical serialization ---------------------------------------------------------------


def _reference_escape(text: str) -> str:
    """NIP-01 string escaping written out character by character, independent of json."""
    short = {"\n": "\\n", '"': '\\"', "\\": "\\\\", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
    out = []
    for c in text:
        if c in short:
            out.append(short[c])
        elif ord(c) < 0x20:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _reference_serialize(event: dict) -> bytes:
    tags = ",".join("[" + ",".join(_reference_escape(s) for s in tag) + "]" for tag in event["tags"])
    text = (
        f'[0,"{event["pubkey"]}",{event["created_at"]},{event["kind"]},[{tags}],{_reference_escape(event["content"])}]'
    )
    return text.encode("utf-8")


_ESCAPES = [
    ("\n", "\\n"),
    ("\r", "\\r"),
    ("\t", "\\t"),
    ("\b", "\\b"),
    ("\f", "\\f"),
    ('"', '\\"'),
    ("\\", "\\\\"),
    ("\x00", "\\u0000"),
    ("\x01", "\\u0001"),
    ("\x0b", "\\u000b"),
    ("\x1b", "\\u001b"),
    ("\x1f", "\\u001f"),
    ("\x7f", "\x7f"),
    ("\x80", "\x80"),
    ("\u00a0", "\u00a0"),
    ("\u2028", "\u2028"),
    ("\u2029", "\u2029"),
    ("/", "/"),
    ("<>&'", "<>&'"),
    ("é", "é"),
    ("日本語", "日本語"),
    ("🦄", "🦄"),
    ("\ufeff", "\ufeff"),
    ("\U0010ffff", "\U0010ffff"),
]


@pytest.mark.parametrize("content, escaped", _ESCAPES, ids=[repr(c) for c, _ in _ESCAPES])
def test_serialize_escaping(content, escaped):
    event = _sample(content=content, tags=[["t", content]])
    pub = event["pubkey"]
    expected = f'[0,"{pub}",1700000000,1,[["t","{escaped}"]],"{escaped}"]'.encode()
    assert nostr.serialize_for_id(event) == expected


def test_serialize_whole_event_shape():
    event = _sample(tags=[], content="")
    assert nostr.serialize_for_id(event) == f'[0,"{event["pubkey"]}",1700000000,1,[],""]'.encode()
    # id and sig are not needed to serialize, so unsigned events work too
    unsigned = {k: event[k] for k in ("pubkey", "created_at", "kind", "tags", "content")}
    assert nostr.serialize_for_id(unsigned) == nostr.serialize_for_id(event)


@settings(max_examples=200, deadline=None, database=None)
@given(
    content=st.text(),
    tags=st.lists(st.lists(st.text(max_size=8), max_size=4), max_size=4),
    created_at=st.integers(0, nostr.MAX_CREATED_AT),
    kind=st.integers(0, 65535),
)
def test_serialize_matches_reference(content, tags, created_at, kind):
    event = _sample(content=content, tags=tags, created_at=created_at, kind=kind)
    assert nostr.serialize_for_id(event) == _reference_serialize(event)


# --- signing ---------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None, database=None)
@given(
    content=st.text(max_size=300),
    tags=st.lists(st.lists(st.text(max_size=10), max_size=3), max_size=5),
    created_at=st.integers(0, 2**40),
    kind=st.integers(0, 65535),
)
def test_sign_verify_round_trip(content, tags, created_at, kind):
    unsigned = {"created_at": created_at, "kind": kind, "tags": tags, "content": content}
    event = nostr.sign_event(unsigned, SK)
    assert list(event) == list(nostr.EVENT_KEYS)
    assert event["pubkey"] == nostr.public_key_xonly(SK).hex()
    nostr.verify_event(event)
    # Survives a trip over the wire in either JSON escaping style.
    assert nostr.parse_event(json.dumps(event, ensure_ascii=False).encode()) == event
    nostr.verify_event(nostr.parse_event(json.dumps(event)))


def test_sign_is_reproducible_with_aux_rand_and_random_without():
    unsigned = {"created_at": 5, "kind": 1, "tags": [], "content": "same"}
    a = nostr.sign_event(unsigned, SK, aux_rand=bytes(32))
    b = nostr.sign_event(unsigned, SK, aux_rand=bytes(32))
    c = nostr.sign_event(unsigned, SK)
    assert a == b
    assert a["id"] == c["id"] and a["sig"] != c["sig"]
    nostr.verify_event(c)


def test_sign_replaces_stale_fields_and_detaches_tags():
    tags = [["t", "x"]]
    old = {**_sample(), "content": "changed", "tags": tags}
    event = nostr.sign_event(old, SK)
    nostr.verify_event(event)
    tags[0][1] = "mutated later"
    nostr.verify_event(event)


@pytest.mark.parametrize(
    "unsigned",
    [
        {"created_at": 1, "kind": 1, "tags": []},
        {"created_at": 1, "kind": 1, "tags": [], "content": "x", "extra": 1},
        {"created_at": 1.5, "kind": 1, "tags": [], "content": "x"},
        {"created_at": 1, "kind": 1, "tags": [[1]], "content": "x"},
        [],
    ],
)
def test_sign_rejects_bad_events(unsigned):
    with pytest.raises(InvalidEvent) as info:
        nostr.sign_event(unsigned, SK)
    assert info.value.reason == "shape"


_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_BAD_KEYS = [
    bytes(32),  # zero
    _N.to_bytes(32, "big"),  # the group order itself
    b"\xff" * 32,  # above the order
    bytes(32) + b"\x01",  # 33 bytes
    b"\x01",  # 1 byte
    SK.hex(),  # hex text instead of bytes
    None,
]


@pytest.mark.parametrize("key", _BAD_KEYS, ids=range(len(_BAD_KEYS)))
def test_invalid_secret_keys(key):
    with pytest.raises(InvalidKey) as info:
        nostr.public_key_xonly(key)
    assert isinstance(info.value, InvalidInput)
    with pytest.raises(InvalidKey):
        nostr.sign_event({"created_at": 1, "kind": 1, "tags": [], "content": ""}, key)


def test_largest_valid_secret_key():
    key = (_N - 1).to_bytes(32, "big")
    assert nostr.public_key_xonly(key) == nostr.public_key_xonly((1).to_bytes(32, "big"))


def test_generate_secret_key():
    keys = {nostr.generate_secret_key() for _ in range(20)}
    assert len(keys) == 20
    for key in keys:
        assert len(key) == 32 and 0 < int.from_bytes(key, "big") < _N
        assert len(nostr.public_key_xonly(key)) == 32


def test_pubkey_not_on_curve_is_bad_signature():
    # BIP-340 row 5: that x has no point on the curve; the id still matches.
    event = _sample()
    bogus = {**event, "pubkey": BIP340_ROWS[5]["public key"].lower()}
    bogus["id"] = nostr.compute_event_id(bogus)
    with pytest.raises(InvalidEvent) as info:
        nostr.verify_event(bogus)
    assert info.value.reason == "bad_signature"


def test_schnorr_verify_never_raises():
    assert nostr.schnorr_verify(b"\x01" * 31, bytes(64), bytes(32)) is False
    assert nostr.schnorr_verify(b"\x01" * 32, bytes(63), bytes(32)) is False


# --- group events -------------------------------------------------------------------------


def test_make_group_event_uses_fresh_ephemeral_keys():
    seen_keys, seen_pubkeys = set(), set()
    for i in range(5):
        event, key = nostr.make_group_event("payload", GID, 1_700_000_000 + i)
        nostr.verify_event(nostr.parse_event(json.dumps(event)))
        assert event["kind"] == nostr.GROUP_EVENT_KIND == 445
        assert event["tags"] == [["h", GID]]
        assert event["content"] == "payload"
        assert event["created_at"] == 1_700_000_000 + i
        assert event["pubkey"] == nostr.public_key_xonly(key).hex()
        assert nostr.group_id_of(event) == GID
        seen_keys.add(key)
        seen_pubkeys.add(event["pubkey"])
    assert len(seen_keys) == len(seen_pubkeys) == 5
    assert nostr.public_key_xonly(SK).hex() not in seen_pubkeys


def test_make_group_event_with_given_key_and_extra_tags():
    extra = [["expiration", "1800000000"], ["t", "x"]]
    event, key = nostr.make_group_event("c", GID, 7, secret_key=SK, extra_tags=extra)
    assert key == SK
    assert event["pubkey"] == nostr.public_key_xonly(SK).hex()
    assert event["tags"] == [["h", GID], *extra]
    nostr.verify_event(event)
    assert nostr.group_id_of(event) == GID


@pytest.mark.parametrize(
    "gid, extra_tags",
    [
        (GID.upper(), ()),
        (GID[:-1], ()),
        (GID + "0", ()),
        (bytes.fromhex(GID), ()),
        (GID, [["h", GID]]),
    ],
)
def test_make_group_event_rejects(gid, extra_tags):
    with pytest.raises(InvalidEvent) as info:
        nostr.make_group_event("c", gid, 1, extra_tags=extra_tags)
    assert info.value.reason == "not_group_event"


def test_make_group_event_accepts_generator_and_rejects_string_tags():
    event, _ = nostr.make_group_event("c", GID, 1, extra_tags=(t for t in [("t", "x")]))
    assert event["tags"] == [["h", GID], ["t", "x"]]
    with pytest.raises(InvalidEvent) as info:
        nostr.make_group_event("c", GID, 1, extra_tags=["tx"])  # type: ignore[list-item]
    assert info.value.reason == "shape"


def test_make_group_event_rejects_bad_key_and_time():
    with pytest.raises(InvalidKey):
        nostr.make_group_event("c", GID, 1, secret_key=bytes(32))
    with pytest.raises(InvalidEvent) as info:
        nostr.make_group_event("c", GID, -1)
    assert info.value.reason == "shape"


def _group_event(tags, kind=445):
    return nostr.sign_event({"created_at": 1, "kind": kind, "tags": tags, "content": "x"}, SK)


@pytest.mark.parametrize(
    "event",
    [
        _group_event([["h", GID]], kind=1),
        _group_event([["h", GID]], kind=444),
        {**_group_event([["h", GID]]), "kind": "445"},
        _group_event([]),
        _group_event([["e", GID]]),
        _group_event([["H", GID]]),
        _group_event([["h", GID], ["h", GID]]),
        _group_event([["h", GID], ["h", "ab" * 32]]),
        _group_event([["h"]]),
        _group_event([["h", GID.upper()]]),
        _group_event([["h", GID[:62]]]),
        _group_event([["h", ""]]),
    ],
    ids=range(12),
)
def test_group_id_of_rejects(event):
    with pytest.raises(InvalidEvent) as info:
        nostr.group_id_of(event)
    assert info.value.reason == "not_group_event"


def test_group_id_of_tolerates_other_tags_and_relay_hint():
    event = _group_event([["p", "ab" * 32], [], ["h", GID, "wss://relay.example"]])
    assert nostr.group_id_of(event) == GID


# --- hostile peers: every undecodable event is a shape error naming its field --------------------

_VALID_EVENT = _sample()


def _event_text(field: str, fragment: str) -> str:
    """A signed event's JSON text with ``field``'s value replaced by the raw JSON ``fragment``."""
    texts = {name: json.dumps(value) for name, value in _VALID_EVENT.items()}
    texts[field] = fragment
    return "{" + ",".join(f'"{name}":{text}' for name, text in texts.items()) + "}"


def _valid_value(field: str, value: object) -> bool:
    return (
        _VALID_EVENT[field] == value
        or (
            field == "tags"
            and type(value) is list
            and all(type(t) is list and all(type(x) is str for x in t) for t in value)
        )
        or (field == "content" and type(value) is str)
        or (field in ("created_at", "kind") and type(value) is int and 0 <= value <= 65535)
    )


@settings(max_examples=400, deadline=None, database=None)
@given(st.sampled_from(nostr.EVENT_KEYS), hostile.hostile_values(3))
def test_hostile_values_are_shape_errors_naming_the_field(field, fragment):
    """Regression: nesting past the recursion limit was reported with no field."""
    text = _event_text(field, fragment)
    oversized = len(text.encode("utf-8")) > nostr.DEFAULT_MAX_BYTES  # refused whole, before parsing
    for raw in (text, text.encode("utf-8")):
        with pytest.raises(InvalidEvent) as info:
            nostr.parse_event(raw)
        assert (info.value.reason, info.value.field) == ("shape", None if oversized else field), str(info.value)[:300]
        assert str(info.value).startswith("malformed event: event is" if oversized else f"malformed field {field}: ")


@settings(max_examples=300, deadline=None, database=None)
@given(st.sampled_from(nostr.EVENT_KEYS), hostile.any_json_type)
def test_wrong_types_are_shape_errors_naming_the_field(field, fragment):
    assume(not _valid_value(field, json.loads(fragment)))
    with pytest.raises(InvalidEvent) as info:
        nostr.parse_event(_event_text(field, fragment))
    assert (info.value.reason, info.value.field) == ("shape", field), str(info.value)


@settings(max_examples=300, deadline=None, database=None)
@given(st.data())
def test_any_byte_mutation_parses_or_is_an_invalid_event(data):
    raw = bytearray(EVENT_LINES[0].encode("utf-8"))
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        event = nostr.parse_event(bytes(raw))
        nostr.verify_event(event)
    except InvalidEvent:
        pass


def test_created_at_is_bounded_so_its_milliseconds_fit_64_bits():
    """Regression: created_at up to 2**63 - 1 passed, but Marmot stores created_at * 1000 (an OverflowError)."""
    assert nostr.MAX_CREATED_AT * 1000 <= 2**63 - 1
    assert nostr.parse_event(json.dumps(_sample(created_at=nostr.MAX_CREATED_AT)))
    for created_at in (nostr.MAX_CREATED_AT + 1, 2**62, 2**63 - 1):
        with pytest.raises(InvalidEvent) as info:
            nostr.parse_event(json.dumps(_sample(created_at=created_at)))
        assert info.value.field == "created_at"


@pytest.mark.parametrize(
    "event",
    [
        _sample(created_at=2**64),
        _sample(content="x\ud800"),
        _sample(tags=[["t", "\udfff"]]),
        _sample(tags=[[["t"]]]),
        _sample(kind=2**70),
    ],
    ids=["created_at-2^64", "content-surrogate", "tag-surrogate", "tags-nested", "kind-70-bits"],
)
def test_hostile_python_values_are_shape_errors(event):
    for call in (nostr.parse_event, nostr.verify_event, nostr.compute_event_id):
        with pytest.raises(InvalidEvent) as info:
            call(event)
        assert info.value.reason == "shape" and str(info.value).startswith("malformed field ")
