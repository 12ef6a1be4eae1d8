"""The tiny key/value store: size limits, write discipline and a cache that is never stale."""

from __future__ import annotations

import threading

import pytest

from core.errors import InvalidInput, TransactionError
from core.kv import KV, MAX_VALUE_BYTES


def stored(db, key):
    return db.value("SELECT value FROM kv WHERE key = ?", (key,), default="<missing>")


def test_set_get_delete_roundtrip(db):
    kv = KV(db)
    with db.write():
        kv.set("flag", "on")
        kv.set("bytes", b"\x00\x01")
        kv.set("count", 3)
        kv.set("none", None)
    with db.read():
        assert (kv.get("flag"), kv.get("bytes"), kv.get("count")) == ("on", b"\x00\x01", 3)
        assert kv.get("none", "default") is None  # a stored NULL is a value, not a miss
        assert kv.get("absent", "default") == "default"
    with db.write():
        kv.delete("flag")
        assert kv.get("flag", "gone") == "gone"
    assert stored(db, "flag") == "<missing>"
    assert kv.items() == {"bytes": b"\x00\x01", "count": 3, "none": None}


def test_items_by_prefix(db):
    kv = KV(db)
    with db.write():
        for key in ("tick.a", "tick.b", "tickle", "other"):
            kv.set(key, 1)
    assert kv.items("tick.") == {"tick.a": 1, "tick.b": 1}


@pytest.mark.parametrize(
    "key, value",
    [
        ("big", "x" * (MAX_VALUE_BYTES + 1)),
        ("big", b"x" * (MAX_VALUE_BYTES + 1)),
        ("k" * 201, 1),
    ],
)
def test_only_tiny_values(db, key, value):
    kv = KV(db)
    with db.write(), pytest.raises(InvalidInput, match="tiny flags and counters only"):
        kv.set(key, value)
    assert stored(db, key) == "<missing>"
    with db.write():
        kv.set("edge", "x" * MAX_VALUE_BYTES)  # the limit itself is fine
    assert len(stored(db, "edge")) == MAX_VALUE_BYTES


@pytest.mark.parametrize(
    "write",
    [
        lambda kv: kv.set("k", 1),
        lambda kv: kv.incr("k"),
        lambda kv: kv.delete("k"),
    ],
)
def test_writes_need_a_write_transaction(db, write):
    kv = KV(db)
    with pytest.raises(TransactionError, match="write transaction"):
        write(kv)
    with db.read(), pytest.raises(TransactionError, match="write transaction"):
        write(kv)
    assert stored(db, "k") == "<missing>"


def test_incr_counts_from_zero_and_returns_the_new_value(db):
    kv = KV(db)
    with db.write():
        assert kv.incr("n") == 1
        assert kv.incr("n", 41) == 42
        assert kv.get("n") == 42
    assert stored(db, "n") == 42


def test_a_new_transaction_sees_another_connections_commit(db, other):
    a, b = KV(db), KV(other)
    with db.write():
        a.set("mode", "old")
    with db.read():
        assert a.get("mode") == "old"  # cached for this transaction
        with other.write():
            b.set("mode", "new")
        assert a.get("mode") == "old"  # same snapshot, same answer
    with db.read():
        assert a.get("mode") == "new"
    with db.write():
        assert a.get("mode") == "new"


def test_reads_outside_a_transaction_are_never_served_stale(db, other):
    """Regression: a value cached in a transaction was returned by a later
    ``get`` outside any transaction after another connection had changed it."""
    a, b = KV(db), KV(other)
    with db.write():
        a.set("mode", "old")
    with db.read():
        assert a.get("mode") == "old"
    with other.write():
        b.set("mode", "new")
    assert a.get("mode") == "new"


def test_a_rolled_back_write_is_not_served_from_the_cache(db):
    """Regression: ``set`` cached its value, so after a rollback ``get`` returned
    a value that was never committed."""
    kv = KV(db)
    with db.write():
        kv.set("mode", "committed")
    with pytest.raises(RuntimeError), db.write():
        kv.set("mode", "rolled back")
        raise RuntimeError("abort")
    assert kv.get("mode") == "committed"


def test_a_rolled_back_savepoint_is_not_served_from_the_cache(db):
    """Regression: inside one transaction, a savepoint rolled back around a
    write left the cache ahead of the data (the pipeline runs each handler
    in such a savepoint)."""
    kv = KV(db)
    with db.write():
        kv.set("mode", "committed")
        kv.incr("n")
    with db.write():
        assert kv.get("mode") == "committed"
        with pytest.raises(RuntimeError), db.write():
            kv.set("mode", "rolled back")
            assert kv.get("mode") == "rolled back"  # read-your-writes inside the savepoint
            kv.incr("n")
            raise RuntimeError("abort")
        assert kv.get("mode") == "committed"
        assert kv.get("n") == 1


def test_two_kv_objects_on_one_connection_share_what_they_see(db):
    """Regression: each KV kept its own cache, so one KV missed the other's
    write on the same connection within a transaction (the runtime and the
    tick each make one)."""
    first, second = KV(db), KV(db)
    with db.write():
        first.set("n", 1)
    with db.write():
        assert first.get("n") == 1
        second.incr("n", 5)
        assert first.get("n") == 6


def test_incr_is_atomic_across_two_connections(db, other):
    counts = 200
    errors = []

    def bump(database):
        kv = KV(database)
        try:
            for _ in range(counts):
                with database.write():
                    kv.incr("hits")
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=bump, args=(conn,)) for conn in (db, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert stored(db, "hits") == 2 * counts


def test_incr_returns_the_value_of_its_own_transaction(db, other):
    a, b = KV(db), KV(other)
    with db.write():
        a.incr("n", 10)
    with db.read():
        assert a.get("n") == 10
    with other.write():
        assert b.incr("n") == 11
    with db.write():
        assert a.incr("n") == 12  # not 11: the earlier cached read is gone
