"""SIGKILL a process running commands, many times: nothing torn, nothing lost.

After every kill the file passes ``PRAGMA integrity_check`` and every
command is either fully applied (all its events, state, deferred and
outgoing rows) or not at all.
"""

from __future__ import annotations

import random
import signal
import time

import pytest

from tests.helpers import raw_connection, start_worker


def check_all_or_nothing(path: str) -> int:
    conn = raw_connection(path)
    conn.set_busy_timeout(5000)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    states = {k[len("state:") :] for (k,) in conn.execute("SELECT key FROM protocol_state WHERE key LIKE 'state:%'")}
    entries = {e for (e,) in conn.execute("SELECT json_extract(payload, '$.entry') FROM events")}
    deferred = {k[len("later:") :] for (k,) in conn.execute("SELECT idempotency_key FROM deferred")}
    outgoing = {k[len("out:") :] for (k,) in conn.execute("SELECT idempotency_key FROM outgoing")}
    effects = {e for e in entries if e.startswith("r")}
    assert states == effects == deferred == outgoing, "an effects command was torn"
    transfers = {e.split(":")[0] for e in entries if e.startswith("t")}
    for transfer in transfers:
        assert {f"{transfer}:out", f"{transfer}:in"} <= entries, f"transfer {transfer} was torn"
    balance = dict(conn.execute("SELECT account, balance FROM ledger_accounts"))
    assert balance.pop("fx", 0) == len(effects), "each effects command deposits exactly 1 into fx"
    assert sum(balance.values()) == 10**9, "a transfer created or lost money"
    conn.close()
    return len(effects)


def crash_loop(path: str, kills: int, seed: int) -> int:
    rng = random.Random(seed)
    done = 0
    for _ in range(kills):
        proc = start_worker("tests.fixtures.crash_worker", path)
        time.sleep(rng.uniform(0.005, 0.15))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done = check_all_or_nothing(path)
    return done


def test_sigkill_never_tears_a_command(tmp_path):
    done = crash_loop(str(tmp_path / "crash.db"), kills=25, seed=1)
    assert done > 0, "the worker never got to run a command"


@pytest.mark.slow
def test_sigkill_many_times(tmp_path):
    done = crash_loop(str(tmp_path / "crash.db"), kills=200, seed=2)
    assert done > 100
