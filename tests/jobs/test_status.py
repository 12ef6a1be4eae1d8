"""`tessera status` an operator can trust: stale daemons shown as stale, readable lease times,
whole tables when piped, and `--watch`."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import time

import pytest

from core.tick_state import TickState, stale_reason
from jobs import times
from tests.fixtures.tick_worker import open_ledger, spawn
from tests.helpers import TESSERA, clean_environment, query_file, wait_until
from tests.helpers import finish_worker as finish
from tests.jobs.test_tick_processes import daemon_states, init


def status(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``tessera status`` as its own process, its output piped (not a terminal)."""
    return subprocess.run(
        [*TESSERA, "--db", db, "status", *args], capture_output=True, text=True, env=clean_environment(), timeout=60
    )


# --- stale daemons -----------------------------------------------------------------------------------


def test_a_daemon_killed_with_sigkill_is_stale_at_once_and_the_standby_alone_runs(tmp_path):
    db = str(tmp_path / "killed.db")
    init(db)
    daemons = [spawn("tick", db, "--ttl", "800") for _ in range(2)]
    assert wait_until(lambda: sorted(d["state"] for d in daemon_states(db)) == ["running", "standby"], timeout=20)
    [holder] = [p for p in daemons if f":{p.pid}:" in query_file(db, "SELECT owner FROM leases")[0][0]]
    [standby] = [p for p in daemons if p is not holder]
    holder.send_signal(signal.SIGKILL)  # and not reaped yet: a zombie still answers kill(pid, 0)

    def holders_entry() -> dict:
        return next(d for d in daemon_states(db) if d["pid"] == holder.pid)

    # Stale as soon as the kernel has ended it (signal delivery takes a moment), long before its file lapses.
    assert wait_until(lambda: holders_entry()["stale"], timeout=2), holders_entry()
    assert holders_entry()["stale_reason"] == f"pid {holder.pid} is not running on this host"
    holder.wait()
    # The standby takes over within a TTL; the dead daemon's file lingers, and never reads as a second "running".
    assert wait_until(lambda: query_file(db, "SELECT token FROM leases")[0][0] == 2, timeout=20)
    assert wait_until(lambda: daemon_states(db)[0]["state"] == "running", timeout=10)
    running = [d for d in daemon_states(db) if d["state"] == "running" and not d["stale"]]
    assert [d["pid"] for d in running] == [standby.pid]
    text = status(db).stdout
    assert f"(pid {holder.pid}): STALE (said 'running'" in text and "is not running on this host" in text, text
    assert f"(pid {standby.pid}): running for " in text, text
    standby.send_signal(signal.SIGTERM)
    finish(standby)


def test_the_lease_line_says_when_its_holder_is_gone_before_the_lease_expires(tmp_path):
    db = str(tmp_path / "gone.db")
    init(db)
    holder = spawn("tick", db, "--ttl", "60000")  # a lease that outlives the test: only liveness can tell
    assert wait_until(lambda: [d["state"] for d in daemon_states(db)] == ["running"], timeout=20)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    [lease] = [line for line in status(db).stdout.splitlines() if line.startswith("lease tick:")]
    assert lease.startswith("lease tick: held by ") and "expires in " in lease, lease
    assert lease.endswith(
        f"; its holder is gone (pid {holder.pid} is not running on this host): a standby takes over when it expires"
    ), lease


def test_a_running_daemon_on_another_host_is_stale_once_another_owner_holds_the_lease():
    def state(owner: str, token: int | None, what: str = "running") -> TickState:
        return TickState(owner, 1, what, None, 0, None, 0, 0, token)

    here = socket.gethostname()
    alive = f"{here}:{os.getpid()}:aa"
    assert stale_reason(state(alive, 3), alive, 3) is None
    assert stale_reason(state("elsewhere:1:bb", 3), "elsewhere:1:bb", 3) is None  # its pid is not ours to check
    assert "the holder is elsewhere:2:cc (token 4)" in (
        stale_reason(state("elsewhere:1:bb", 3), "elsewhere:2:cc", 4) or ""
    )
    assert "no longer holds" in (stale_reason(state(alive, 3), alive, 4) or "")  # same owner, a newer token
    assert stale_reason(state("elsewhere:1:bb", None, "standby"), "elsewhere:2:cc", 4) is None
    # A daemon from before states recorded their token: its owner alone decides.
    assert stale_reason(state("elsewhere:1:bb", None), "elsewhere:1:bb", 4) is None
    assert "the holder is elsewhere:2:cc" in (stale_reason(state("elsewhere:1:bb", None), "elsewhere:2:cc", 4) or "")


def test_state_files_written_before_tokens_were_recorded_still_read(tmp_path):
    from core.tick_state import read_states

    folder = tmp_path / "old.db.tick"
    folder.mkdir()
    old = {
        "owner": "h:1:aa",
        "pid": 1,
        "state": "standby",
        "reason": None,
        "since_ms": 1,
        "retry_at_ms": None,
        "updated_at_ms": 1,
        "valid_until_ms": 10,
    }
    (folder / "h_1_aa.json").write_text(json.dumps(old))
    [read] = read_states(str(tmp_path / "old.db"), 5)
    assert read.token is None and read.owner == "h:1:aa"


# --- readable times, whole tables ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "ms, text",
    [(0, "0 ms"), (999, "999 ms"), (1_000, "1 s"), (59_999, "59 s"), (61_000, "1 min 1 s"), (3_720_000, "1 h 2 min")],
)
def test_durations_read_in_their_largest_units(ms, text):
    assert times.duration(ms) == text


def test_moments_are_utc_with_an_age():
    assert times.moment(1_700_000_000_000, 1_700_000_090_000) == "2023-11-14 22:13:20 UTC (1 min 30 s ago)"
    assert times.relative(1_700_000_012_000, 1_700_000_000_000) == "in 12 s"


def test_status_shows_the_lease_in_words_and_keeps_raw_milliseconds_in_json(tmp_path):
    db = str(tmp_path / "lease.db")
    for command in (["init"], ["tick", "--once"]):
        done = subprocess.run([*TESSERA, "--db", db, *command], capture_output=True, text=True, env=clean_environment())
        assert done.returncode == 0, done.stderr
    text = status(db).stdout
    assert "lease tick: free, released by " in text and "(token 1)" in text, text
    assert "expires_at_ms" not in text
    lease = json.loads(status(db, "--json").stdout)["lease"]
    assert lease["expires_at_ms"] == 0 and lease["token"] == 1 and lease["acquired_at_ms"] > 0


def test_piped_status_never_cuts_a_line_to_the_terminal_width(tmp_path):
    deep = tmp_path / ("a_directory_name_long_enough_to_push_the_title_past_eighty_columns_" * 2)
    deep.mkdir()
    db = str(deep / "wide.db")
    init(db)
    text = status(db).stdout
    assert f"Tessera status — {db} — " in text, text
    assert "…" not in text


# --- --watch ----------------------------------------------------------------------------------------------


def watch_lines(db: str, count: int, *args: str) -> list[str]:
    """The first ``count`` lines `status --watch ARGS` prints to a pipe; then it is stopped."""
    proc = subprocess.Popen(
        [*TESSERA, "--db", db, "status", "--watch", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_environment(),
    )
    assert proc.stdout is not None
    try:
        return [proc.stdout.readline() for _ in range(count)]
    finally:
        _, err = interrupt(proc)
        assert proc.returncode == 0, err  # Ctrl-C ends a watch quietly


def interrupt(proc: subprocess.Popen) -> tuple[str, str]:
    """Ctrl-C ``proc`` and wait for it to end; one still running 30 s later is killed (not left behind) and fails."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise


def test_watch_piped_with_json_prints_one_snapshot_per_line_with_rates(tmp_path):
    db = str(tmp_path / "watched.db")
    app = open_ledger(db)
    app.close()
    first, second = (json.loads(line) for line in watch_lines(db, 2, "--interval", "0.2", "--json"))
    assert first["watch"]["events_per_s"] is None  # no earlier snapshot to compare with
    assert second["watch"]["events_per_s"] == 0 and second["watch"]["items_per_s"] == 0
    assert second["taken_at_ms"] - first["taken_at_ms"] >= 200
    assert {"lease", "daemons", "parked", "last_errors"} <= set(second)


def test_watch_piped_prints_the_view_again_and_again(tmp_path):
    db = str(tmp_path / "plain.db")
    init(db)
    lines = "".join(watch_lines(db, 40, "--interval", "0.1"))
    assert lines.count("Tessera status — ") >= 2, lines
    assert "events …, items …; incoming: none waiting" in lines
    assert "events 0/s, items 0/s" in lines


def test_interval_without_watch_is_a_usage_error(tmp_path):
    db = str(tmp_path / "usage.db")
    init(db)
    refused = status(db, "--interval", "1")
    assert refused.returncode == 2 and "--interval only applies with --watch" in refused.stderr


def test_watch_on_a_terminal_redraws_in_place(tmp_path):
    db = str(tmp_path / "terminal.db")
    init(db)
    leader, follower = pty.openpty()
    env = clean_environment(TERM="xterm-256color", COLUMNS="120", LINES="50")
    proc = subprocess.Popen(
        [*TESSERA, "--db", db, "status", "--watch", "--interval", "0.1"],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 30
        while seen.count(b"Tessera status") < 3 and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                seen += os.read(leader, 65536)
    finally:
        interrupt(proc)
        os.close(leader)
    assert seen.count(b"Tessera status") >= 3, seen[-2000:]
    # Each later frame moves the cursor back up over the previous one (ESC [ n A) instead of scrolling on.
    assert re.search(rb"\x1b\[\d*A", seen), seen[-2000:]
    assert proc.returncode == 0


@pytest.mark.parametrize("json_lines", [False, True])
def test_watch_ends_quietly_with_status_0_when_its_reader_leaves(tmp_path, json_lines):
    """`status --watch | head -1`: the closed pipe ends the watch; it is no failure and prints no traceback."""
    db = str(tmp_path / "head.db")
    init(db)
    command = [*TESSERA, "--db", db, "status", "--watch", "--interval", "0.1", *(["--json"] if json_lines else [])]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_environment())
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=30) == 0
    assert proc.stderr.read() == b""
