"""Disk full, I/O errors and no memory inside an item's work: the environment failed, not the item.

The item's transaction rolls back whole (its bookkeeping included), no
attempt is counted, and the work is done as if nothing happened once the
condition clears.  Faults are injected the SQLite way: a VFS wrapping the
default one fails the N-th write/sync/truncate, for every N over a run.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import tempfile
from pathlib import Path

import apsw
import attrs
import pytest

from core import queues
from core.app import App
from core.clock import ManualClock
from core.db import Database
from core.drain import run_until_idle
from core.errors import StorageUnavailable
from core.plugins import make_plugin_manager
from core.registry import Registry
from core.settings import Settings
from tests.fixtures import ledger
from tests.fixtures.faulty_vfs import faulty_vfs
from tests.helpers import next_incoming_kind, open_test_app

SETTINGS = Settings.load(env={}, retry_base_ms=5, retry_max_ms=50, max_attempts=3, busy_timeout_ms=2000)
ENVIRONMENT_ERRORS = (apsw.IOError, apsw.FullError, apsw.NoMemError)


def open_ledger(path: str, clock: ManualClock, *, create: bool = False) -> App:
    return open_test_app(path, SETTINGS, [ledger], ["ledger"], clock=clock, create=create)


@functools.cache
def ledger_registry() -> Registry:
    return Registry(make_plugin_manager([ledger], entry_points=False))


def reopen_ledger(path: str, clock: ManualClock) -> App:
    """A new connection to a ledger database made by :func:`open_ledger` (its schemas are known applied)."""
    return App(Database(path, SETTINGS, create=False), ledger_registry(), ["ledger"], clock=clock)


class Reader:
    """One plain connection (the default VFS) for the checks."""

    def __init__(self, path: str):
        self.conn = apsw.Connection(path, vfs="unix")

    def __call__(self, sql: str) -> list[tuple]:
        return self.conn.execute(sql).fetchall()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


def query(path: str, sql: str) -> list[tuple]:
    with Reader(path) as read:
        return read(sql)


def workload(count: int) -> list[bytes]:
    """Deposits, items that fail transiently first or for good, and items blocked until a later deposit."""
    blobs = []
    for n in range(count):
        kind = n % 6
        if kind == 1:
            blobs.append(ledger.wire("flaky", f"f{n}", f"acc{n % 3}", 2, fail_times=1))
        elif kind == 3:
            blobs.append(ledger.wire("needs", f"n{n}", "late", 1))
        elif kind == 5 and n % 12 == 5:
            blobs.append(ledger.wire("transient", f"t{n}", f"acc{n % 3}"))
        else:
            blobs.append(ledger.wire("deposit", f"d{n}", f"acc{n % 3}", n + 1))
    return [*blobs, ledger.wire("deposit", "open-late", "late", 100)]


def prepare(tmp_path: Path, blobs: list[bytes]) -> str:
    path = str(tmp_path / "template.db")
    app = open_ledger(path, ManualClock(), create=True)
    with app.db.write():
        queues.push_incoming(app.db, "ledger", blobs, 0)
    app.close()
    return path


def end_state(path: str) -> dict:
    with Reader(path) as query:
        return {
            "events": sorted(query("SELECT event_type, hex(event_id), payload FROM events")),
            "balances": sorted(query("SELECT account, balance FROM ledger_accounts")),
            "entries": sorted(query("SELECT hex(entry_id), account, amount FROM ledger_entries")),
            "parked": sorted(query("SELECT hex(blob), reason, attempts FROM parked")),
            "left": query(
                "SELECT (SELECT count(*) FROM incoming), (SELECT count(*) FROM deferred), "
                "(SELECT count(*) FROM blocked), (SELECT count(*) FROM recheck_queue)"
            ),
        }


def check_consistent(path: str, blobs: list[bytes]) -> None:
    """Integrity, and each item in exactly one place: applied (its event and its entry), a queue, or parked."""
    with Reader(path) as query:
        assert query("PRAGMA integrity_check") == [("ok",)]
        places: dict[bytes, list[str]] = {blob: [] for blob in blobs}
        for table, column in (("incoming", "blob"), ("deferred", "payload"), ("blocked", "blob"), ("parked", "blob")):
            for (blob,) in query(f"SELECT {column} FROM {table}"):
                places[blob].append(table)
        applied = {json.loads(p)["entry"] for (p,) in query("SELECT payload FROM events")}
        for blob in blobs:
            if json.loads(blob)["id"] in applied:
                places[blob].append("applied")
        for blob, where in places.items():
            assert len(where) == 1, f"{blob!r} is in {where}"
        assert query("SELECT count(*) FROM ledger_entries") == query(
            "SELECT count(*) FROM events WHERE event_type = 'deposited'"
        )
        assert query("SELECT coalesce(sum(balance), 0) FROM ledger_accounts") == query(
            "SELECT coalesce(sum(amount), 0) FROM ledger_entries"
        )


def clean_run(tmp_path: Path, template: str) -> dict:
    path = str(tmp_path / "clean.db")
    shutil.copy(template, path)
    app = open_ledger(path, ManualClock())
    run_until_idle(app.runtime, advance_clock=True)
    app.close()
    return end_state(path)


def run_with_fault(workdir: Path, template: str, nth: int, blobs: list[bytes]) -> str | None:
    """Run the workload failing its ``nth`` write/sync/truncate, check, restart and finish.

    Returns the operation failed, or None once ``nth`` is past the workload's last.
    """
    path = str(workdir / f"fault{nth}.db")
    for suffix in ("", "-wal", "-shm"):
        Path(path + suffix).unlink(missing_ok=True)
    shutil.copy(template, path)
    clock = ManualClock()
    error = ENVIRONMENT_ERRORS[nth % len(ENVIRONMENT_ERRORS)]
    with faulty_vfs() as vfs:
        app = reopen_ledger(path, clock)
        # Checkpoint (sync, then truncate the WAL) every few pages, as a longer run would.
        app.db.conn.pragma("wal_autocheckpoint", 16)
        app.db.conn.pragma("journal_size_limit", 16_384)
        vfs.arm(nth, error)
        with contextlib.suppress(StorageUnavailable):
            run_until_idle(app.runtime, advance_clock=True)
        vfs.disarm()
        app.close()
    if not vfs.injected:
        return None
    check_consistent(path, blobs)
    restarted = reopen_ledger(path, clock)
    run_until_idle(restarted.runtime, advance_clock=True)
    restarted.close()
    return vfs.injected[0]


def fault_every_operation(workdir: Path, count: int) -> tuple[int, set[str]]:
    """Fail operation 1, then 2, ... of the workload until one past its last; (operations, kinds failed)."""
    blobs = workload(count)
    template = prepare(workdir, blobs)
    clean = clean_run(workdir, template)
    assert clean["left"] == [(0, 0, 0, 0)] and clean["parked"]
    nth, kinds = 1, set()
    while (injected := run_with_fault(workdir, template, nth, blobs)) is not None:
        assert end_state(str(workdir / f"fault{nth}.db")) == clean, f"fault at {injected}"
        kinds.add(injected.split()[0])
        for suffix in ("", "-wal", "-shm"):
            Path(workdir / f"fault{nth}.db{suffix}").unlink(missing_ok=True)
        nth += 1
    return nth - 1, kinds


def test_disk_full_inside_an_item_rolls_it_back_and_costs_no_attempt(tmp_path):
    app = open_ledger(str(tmp_path / "full.db"), ManualClock(), create=True)
    blobs = [ledger.wire("deposit", f"d{n}", f"acc{n}", n) for n in range(200)]
    with app.db.write():
        queues.push_incoming(app.db, "ledger", blobs, 0)
    app.db.conn.pragma("max_page_count", app.db.conn.pragma("page_count"))  # the file may not grow
    handled = 0
    with pytest.raises(StorageUnavailable, match="full"):
        while next_incoming_kind(app) == "handled":
            handled += 1
    assert 0 < handled < len(blobs)
    assert app.db.value("SELECT blob FROM incoming ORDER BY id") == blobs[handled]  # still first in line
    assert [app.db.value(f"SELECT count(*) FROM {t}") for t in ("events", "deferred", "parked")] == [handled, 0, 0]
    app.db.conn.pragma("max_page_count", 1 << 30)
    assert run_until_idle(app.runtime).outcomes == {"handled": len(blobs) - handled}
    assert app.db.value("SELECT count(*) FROM events") == len(blobs)
    app.close()


def test_a_full_disk_in_an_isolated_projector_is_not_recorded_as_its_failure(tmp_path: Path) -> None:
    """Regression: the failure was recorded (after SQLite had rolled the transaction back, so in
    autocommit, outside the item's transaction) and the projection flagged as failed."""
    # With its projector isolated, a projector failure would be recorded and skipped.
    isolated = ledger.with_projectors(attrs.evolve(ledger.BALANCES, isolate_failures=True))
    app = open_test_app(str(tmp_path / "isolated.db"), SETTINGS, [isolated], ["ledger"], clock=ManualClock())
    blobs = [ledger.wire("deposit", f"d{n}", f"acc{n}", n) for n in range(200)]
    with app.db.write():
        queues.push_incoming(app.db, "ledger", blobs, 0)
    app.db.conn.pragma("max_page_count", app.db.conn.pragma("page_count"))
    with pytest.raises(StorageUnavailable, match="full"):
        while next_incoming_kind(app) == "handled":
            pass
    assert app.db.value("SELECT count(*) FROM projection_failures") == 0
    assert app.db.value("SELECT failures FROM projections WHERE name = 'ledger.balances'") == 0
    app.db.conn.pragma("max_page_count", 1 << 30)
    run_until_idle(app.runtime)
    assert app.db.value("SELECT count(*) FROM ledger_entries") == len(blobs)
    assert app.db.value("SELECT count(*) FROM projection_failures") == 0
    app.close()


@pytest.fixture
def workdir(tmp_path):
    """A directory in memory when the machine has one: each run's checkpoints would otherwise cost real
    fsyncs (~5 ms here), and this test makes hundreds of runs."""
    if not Path("/dev/shm").is_dir():
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="tessera-faults-", dir="/dev/shm"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_a_fault_at_every_write_sync_and_truncate_loses_and_doubles_nothing(workdir):
    operations, kinds = fault_every_operation(workdir, 6)
    assert operations > 50 and kinds == {"write", "sync", "truncate"}  # each one of them failed once


@pytest.mark.slow
def test_a_fault_at_every_operation_of_a_bigger_workload(workdir):
    operations, kinds = fault_every_operation(workdir, 80)
    assert operations > 500 and kinds == {"write", "sync", "truncate"}
