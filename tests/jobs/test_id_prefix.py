"""Ids by unique prefix (jobs/id_prefix.py): the range bounds, the errors, and blobs named by a prefix for real."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import blobs
from core.errors import InvalidInput
from jobs.id_prefix import MIN_PREFIX, AmbiguousId, IdRange, NoSuchId, prefix_of, resolve
from tests.helpers import invoke, one_line_error

HEX = "0123456789abcdef"
hex_text = st.text(HEX, min_size=1, max_size=20)


@given(hex_text, hex_text)
def test_an_id_is_in_the_text_range_exactly_when_it_starts_with_the_prefix(prefix, rest):
    for candidate in (prefix + rest, rest, rest + prefix):
        low, high = IdRange(prefix).text
        assert (low <= candidate < high) == candidate.startswith(prefix)


@given(hex_text, st.binary(max_size=12))
def test_an_id_is_in_the_bytes_range_exactly_when_its_hex_starts_with_the_prefix(prefix, other):
    whole = bytes.fromhex((prefix + "0")[: len(prefix) + len(prefix) % 2])
    low, high = IdRange(prefix).bytes
    for candidate in (whole + other, other, b"\xff" * len(whole) + other):
        assert (low <= candidate < high) == candidate.hex().startswith(prefix)


def _lookup(ids: list[str]):
    def lookup(wanted: IdRange, limit: int) -> list[str]:
        low, high = wanted.text
        return [i for i in sorted(ids) if low <= i < high][:limit]

    return lookup


def test_resolve_names_the_one_match_or_the_ambiguous_ones():
    ids = ["fc20244edd11" + "0" * 52, "fc20aa" + "1" * 58, "fc2a" + "2" * 60, "ab" * 32]
    assert resolve("FC202", "message", _lookup(ids), "tessera x list") == ids[0]
    assert resolve("fc2a", "message", _lookup(ids), "tessera x list") == ids[2]
    with pytest.raises(AmbiguousId) as ambiguous:
        resolve("fc20", "message", _lookup(ids), "tessera x list")
    said = str(ambiguous.value)
    assert said.startswith("fc20 is ambiguous: message ids fc20244edd110000…, fc20aa1111111111… start with it")
    assert said.endswith("give more characters")


def test_a_short_a_bad_or_an_unknown_prefix_is_refused_with_what_to_do():
    ids = ["fc20" * 16, "fc21" * 16]
    with pytest.raises(InvalidInput, match=f"at least {MIN_PREFIX} hex characters"):
        resolve("fc2", "message", _lookup(ids), "tessera x list")
    with pytest.raises(InvalidInput, match="is not a message id"):
        resolve("fc2z", "message", _lookup(ids), "tessera x list")
    with pytest.raises(NoSuchId, match="no message id starts with beef; `tessera x list` lists them"):
        resolve("beef", "message", _lookup(ids), "tessera x list")
    # A whole id names itself: whether it exists is the command's to say.
    assert resolve("ee" * 32, "message", _lookup(ids), "tessera x list", length=64) == "ee" * 32
    assert prefix_of("  FC20 ", "message").prefix == "fc20"


def _colliding_contents() -> tuple[bytes, bytes]:
    """Two contents whose SHA-256s share their first MIN_PREFIX hex characters (and differ after)."""
    seen: dict[str, bytes] = {}
    for number in itertools.count():
        content = b"blob %d" % number
        start = hashlib.sha256(content).hexdigest()[:MIN_PREFIX]
        if start in seen:
            return seen[start], content
        seen[start] = content
    raise AssertionError("unreachable")


def test_blob_commands_take_a_unique_prefix_and_refuse_an_ambiguous_one(tmp_path: Path, make_app) -> None:
    app = make_app([], [])
    db = app.db.path
    first, second = _colliding_contents()
    ids = []
    for name, content in (("a", first), ("b", second)):
        (tmp_path / name).write_bytes(content)
        assert invoke("--db", db, "blob", "import", str(tmp_path / name)).exit_code == 0
        ids.append(hashlib.sha256(content).hexdigest())
    shared = ids[0][:MIN_PREFIX]
    error = one_line_error(invoke("--db", db, "blob", "export", shared, str(tmp_path / "out")))
    assert f"{shared} is ambiguous" in error and ids[0][:16] in error and ids[1][:16] in error
    unique = next(length for length in range(MIN_PREFIX, 64) if ids[0][:length] != ids[1][:length])
    exported = invoke("--db", db, "blob", "export", ids[1][:unique], str(tmp_path / "out"))
    assert exported.exit_code == 0 and (tmp_path / "out").read_bytes() == second
    assert "wrote 1 byte" not in exported.output and f"wrote {len(second)} bytes" in exported.output
    missing = one_line_error(invoke("--db", db, "blob", "reset", "0000"))
    assert f"no blob id starts with 0000; `tessera --db {db} blob list` lists them" in missing
    listed = invoke("--db", db, "blob", "list").output
    assert ids[0][:12] in listed and ids[1][:12] in listed and listed.strip().endswith("2 blobs")
    with app.db.read():
        assert blobs.ids_between(app.db, *IdRange(shared).text, 10) == sorted(ids)
