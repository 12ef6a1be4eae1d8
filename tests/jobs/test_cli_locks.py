"""The command line next to other processes that hold the write lock or the tick lease, as real processes."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from tests.helpers import ROOT, TESSERA, clean_environment, raw_connection, wait_until


def tessera(db: Path, *args: str, timeout: float = 60, **settings: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TESSERA, "--db", str(db), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=clean_environment(**settings),
        timeout=timeout,
    )


def start_tessera(db: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """``tessera --db db args`` left running, its output piped."""
    return subprocess.Popen(
        [*TESSERA, "--db", str(db), *args], cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def lease_owner(db) -> str | None:
    conn = raw_connection(str(db))
    conn.set_busy_timeout(5_000)
    try:
        rows = conn.execute("SELECT owner FROM leases WHERE name = 'tick' AND expires_at_ms > 0").fetchall()
    finally:
        conn.close()
    if not rows:
        return None
    owner = rows[0][0]
    assert isinstance(owner, str)
    return owner


def test_status_answers_while_another_process_holds_the_write_lock(tmp_path):
    """Regression: status opened the database for writing (schema step), so it waited for the lock and
    failed with DatabaseBusy."""
    db = tmp_path / "locked.db"
    assert tessera(db, "init", "--protocol", "example").returncode == 0
    holder = raw_connection(str(db))
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        proc = tessera(db, "status", "--json", TESSERA_BUSY_TIMEOUT_MS="3000", TESSERA_BUSY_RETRIES="0")
        took = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["incoming"] == 0 and report["daemons"] == []
    assert took < 3, f"status waited {took:.1f} s for a lock it does not need"


def test_until_idle_refuses_at_once_while_another_daemon_holds_the_lease_and_waits_with_wait(tmp_path):
    """Regression: --until-idle waited as a standby for as long as the other daemon ran (forever)."""
    db = tmp_path / "busy.db"
    assert tessera(db, "init", "--protocol", "example").returncode == 0
    env = clean_environment(TESSERA_LEASE_TTL_MS="2000")
    holder = start_tessera(db, "tick", env=env)
    try:
        assert wait_until(lambda: lease_owner(db) is not None, timeout=20, step=0.05)
        started = time.monotonic()
        refused = tessera(db, "tick", "--until-idle", timeout=30, TESSERA_LEASE_TTL_MS="2000")
        assert time.monotonic() - started < 10
        assert refused.returncode == 1
        [line] = [line for line in refused.stderr.splitlines() if line.strip()]
        owner = lease_owner(db)
        assert owner is not None
        assert line.startswith("Error: ") and "held by" in line and owner in line and "--wait" in line

        waiting = start_tessera(db, "tick", "--until-idle", "--wait", env=env)
        time.sleep(1)
        assert waiting.poll() is None, waiting.communicate()[1]
        holder.send_signal(signal.SIGTERM)  # releases the lease: the waiting one takes it, drains, exits
        assert holder.wait(timeout=30) == 0
        out, err = waiting.communicate(timeout=30)
        assert waiting.returncode == 0, err
        assert "tick stopped (idle)" in out
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
