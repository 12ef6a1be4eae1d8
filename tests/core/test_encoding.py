"""Canonical JSON both ways: what the core encodes, and what it accepts from a peer."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import encoding
from core.errors import DecodeError, EncodingError, InvalidInput, MalformedInput, PermanentError
from tests import strategies as hostile
from tests.helpers import field_root

LIMIT = encoding.MAX_DEPTH


def nested_value(depth: int) -> list:
    value: list = [1]
    for _ in range(depth - 1):
        value = [value]
    return value


# --- encoding: the core refuses what it could not store, hash or replay -------------------


@given(st.one_of(hostile.timestamps_too_big, st.integers(max_value=hostile.INT64_MIN - 1)))
def test_integers_beyond_64_bits_are_refused_when_encoding(number):
    with pytest.raises(EncodingError, match=r"payload\.ts .*signed 64-bit"):
        encoding.dumps({"ts": number, "ok": 1})
    with pytest.raises(EncodingError, match=r"payload\[1\]"):
        encoding.dumps(["x", number])


@given(hostile.lone_surrogates)
def test_lone_surrogates_are_refused_when_encoding(text):
    """Regression: the UTF-8 step raised UnicodeEncodeError, which the pipeline took for a bug and retried."""
    with pytest.raises(EncodingError, match=r"payload\.room .*surrogate"):
        encoding.dumps({"room": text})
    with pytest.raises(EncodingError, match=r"payload .*key .*surrogate"):
        encoding.dumps({text: 1})


@pytest.mark.parametrize("depth", [LIMIT + 1, 5_000])
def test_nesting_deeper_than_the_limit_is_refused_when_encoding(depth):
    with pytest.raises(EncodingError, match=f"deeper than {LIMIT}"):
        encoding.dumps({"x": nested_value(depth)})


def test_nesting_up_to_the_limit_encodes():
    assert encoding.dumps(nested_value(LIMIT)) == ("[" * LIMIT + "1" + "]" * LIMIT).encode()


# --- decoding peer input ---------------------------------------------------------------------


@settings(max_examples=300)
@given(st.sampled_from(["ts", "room", "body"]), hostile.hostile_values(LIMIT))
def test_hostile_values_are_malformed_naming_the_field(field, fragment):
    text = '{"kind":"post",' + json.dumps(field) + ":" + fragment + ',"z":1}'
    with pytest.raises(MalformedInput) as raised:
        encoding.loads_untrusted(text.encode())
    error = raised.value
    assert field_root(error.field) == field, (error.field, str(error)[:200])
    assert str(error).startswith("malformed field ") and field in str(error)
    assert isinstance(error, DecodeError) and isinstance(error, PermanentError) and isinstance(error, InvalidInput)


@settings(max_examples=300)
@given(st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_are_malformed(blob):
    with contextlib.suppress(MalformedInput):
        encoding.loads_untrusted(blob)


@settings(max_examples=200)
@given(st.text(alphabet='[]{}",:0123456789.-eEtrufalsn \\u', max_size=40))
def test_arbitrary_json_like_text_decodes_or_is_malformed(text):
    with contextlib.suppress(MalformedInput):
        encoding.loads_untrusted(text)


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(hostile.INT64_MIN, hostile.INT64_MAX), st.text(max_size=8)),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_what_the_core_encodes_it_decodes_unchanged(value):
    assert encoding.loads_untrusted(encoding.dumps(value)) == value


@pytest.mark.parametrize(
    "blob, field, detail",
    [
        (b'{"a":1,"a":2}', "a", "more than once"),
        (b'{"a":\xff}', None, "not UTF-8"),
        (b'\xef\xbb\xbf{"a":1}', None, "not JSON"),
        (b'{"a":1.5}', "a", "not an integer"),
        (b'{"a":NaN}', "a", "not an integer"),
        (b'{"a":[1,{"b":9223372036854775808}]}', "a[1].b", "signed 64-bit"),
        (b'{"a":"\\udc00x"}', "a", "surrogate"),
        (b'{"\\ud800":1}', None, "surrogate"),
        (b"[" * 50_000, None, f"deeper than {LIMIT}"),
        (b'{"deep":' + b"[" * 50_000, "deep", f"deeper than {LIMIT}"),
        (b'{"a":1} x', None, "not JSON"),
    ],
)
def test_each_refusal_says_what_and_where(blob, field, detail):
    with pytest.raises(MalformedInput, match=detail) as raised:
        encoding.loads_untrusted(blob)
    assert raised.value.field == field
    assert str(raised.value).startswith("malformed field " if field else "malformed input")


# --- records: a decoder of any plugin cannot pass on a timestamp SQLite cannot store ----------


@given(hostile.timestamps_too_big)
def test_envelopes_and_events_refuse_timestamps_beyond_64_bits(ms):
    from core.records import Envelope, Event

    with pytest.raises(InvalidInput, match="created_at_ms must be a non-negative integer of milliseconds below 2"):
        Envelope(protocol="p", type="t", event_id=b"x", partition_key="", created_at_ms=ms)
    with pytest.raises(InvalidInput, match="created_at_ms"):
        Event("happened", b"x", "", ms)
