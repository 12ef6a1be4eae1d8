"""The acceptance flow with the real ``tessera`` command line, each step its own process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import TESSERA, clean_environment, cli_options, marmot_join_args, one_line_error

FAST = {"TESSERA_RETRY_BASE_MS": "5", "TESSERA_RETRY_MAX_MS": "50", "TESSERA_MARMOT_RETRY_MS": "40"}


def run(workdir: Path, *args: str, check: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
    """``tessera args`` in its own process, on an encrypted database whose key file also seals the group state."""
    environ = clean_environment(TESSERA_DB=str(workdir / "tessera.db"), **FAST, **env)
    proc = subprocess.run([*TESSERA, *args], capture_output=True, text=True, cwd=workdir, env=environ, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"tessera {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc


def test_simulate_join_ingest_tick_history(tmp_path: Path) -> None:
    acceptance(tmp_path, *cli_options(members=4, messages=120, commits=8, races=3, garbage=12, duplicates=10, seed=7))


@pytest.mark.slow
def test_acceptance_with_a_bigger_group_and_stream(tmp_path: Path) -> None:
    acceptance(
        tmp_path, *cli_options(members=9, messages=3000, commits=40, races=8, garbage=60, duplicates=100, seed=8)
    )


def acceptance(tmp_path: Path, *simulate_args: str) -> None:
    out = tmp_path / "D"
    run(tmp_path, "marmot", "simulate", *simulate_args, "--out", str(out))
    expected = json.loads((out / "expected.json").read_text())
    run(tmp_path, "init")
    joined = run(tmp_path, *marmot_join_args(out))
    assert expected["group"] in joined.stdout
    run(tmp_path, "ingest", "--protocol", "marmot", str(out / "relay.jsonl"))
    ticked = run(tmp_path, "tick", "--until-idle")
    assert "tick stopped (idle)" in ticked.stdout
    gid = expected["group"]
    whole = json.loads(run(tmp_path, "marmot", "history", "--group", gid, "--limit", "100000", "--json").stdout)
    assert (whole["next_cursor"], whole["has_more"]) == (None, False)
    shown = whole["messages"]
    assert [r["id"] for r in shown] == expected["rumor_ids"]
    assert set(shown[0]) >= {"id", "created_at", "pubkey", "kind", "content", "outer_id", "outer_created_at", "state"}
    everything = json.loads(
        run(
            tmp_path, "marmot", "history", "--group", gid, "--limit", "100000", "--include-invalidated", "--json"
        ).stdout
    )["messages"]
    states = {r["id"]: r["state"] for r in everything}
    assert expected["invalidated_ids"] and all(states[i] == "EpochInvalidated" for i in expected["invalidated_ids"])
    [group] = json.loads(run(tmp_path, "marmot", "groups", "--json").stdout)
    assert group["group"] == gid and group["epoch"] == expected["final_epoch"]
    # The database's key opens the sealed profile too; ingested files never move the fetch window.
    assert group["name"] is not None and group["fetch"] == {"newest_fetched": None, "last_fetch": None, "since": None}
    assert group["outer_events"]["Failed"] == expected["failed"]
    failed = json.loads(run(tmp_path, "marmot", "outer", "--group", gid, "--json").stdout)
    assert len(failed) == expected["failed"] and all(f["reason"] for f in failed)
    # Paging with --before walks back through the same history: the newest page first, each oldest first.
    newest = json.loads(run(tmp_path, "marmot", "history", "--group", gid, "--limit", "5", "--json").stdout)
    assert [r["id"] for r in newest["messages"]] == expected["rumor_ids"][-5:] and newest["has_more"]
    assert newest["next_cursor"] == f"{shown[-5]['created_at']}:{shown[-5]['id']}"
    page = json.loads(
        run(
            tmp_path, "marmot", "history", "--group", gid, "--limit", "5", "--before", newest["next_cursor"], "--json"
        ).stdout
    )
    assert [r["id"] for r in page["messages"]] == expected["rumor_ids"][-10:-5]
    # --until, the old spelling, still pages the same way.
    old = run(tmp_path, "marmot", "history", "--group", gid, "--limit", "5", "--until", newest["next_cursor"], "--json")
    assert json.loads(old.stdout) == page
    # Our own message: Created, published by the tick, Processed on its echo.
    sent = run(tmp_path, "marmot", "send", "--group", gid, "hello from the observer")
    rumor_id = sent.stdout.split("rumor ")[1].split()[0]
    run(tmp_path, "tick", "--until-idle")
    last = json.loads(run(tmp_path, "marmot", "history", "--group", gid, "--limit", "1", "--json").stdout)["messages"][
        -1
    ]
    assert (last["id"], last["state"], last["content"]) == (rumor_id, "Processed", "hello from the observer")
    filter_ = json.loads(run(tmp_path, "marmot", "filter", "--group", gid).stdout)
    # Neither an ingested file nor our own echo tells what the relays hold: no sync has fetched yet.
    assert filter_ == {"kinds": [445], "#h": [expected["nostr_group_id"]]}


def test_backfill_command_processes_a_file_at_once(tmp_path):
    out = tmp_path / "D"
    simulation = cli_options(messages=40, commits=4, races=0, garbage=0, duplicates=0, seed=3)
    run(tmp_path, "marmot", "simulate", *simulation, "--out", str(out))
    expected = json.loads((out / "expected.json").read_text())
    run(tmp_path, "init", "--protocol", "marmot")
    run(tmp_path, *marmot_join_args(out))
    done = run(tmp_path, "marmot", "backfill", "--group", expected["group"], str(out / "relay.jsonl"))
    assert "backfill: handled=" in done.stdout
    again = run(tmp_path, "marmot", "backfill", "--group", expected["group"], str(out / "relay.jsonl"))
    assert "nothing new" in again.stdout
    shown = json.loads(
        run(tmp_path, "marmot", "history", "--group", expected["group"], "--limit", "1000", "--json").stdout
    )["messages"]
    assert [r["id"] for r in shown] == expected["rumor_ids"]


def test_user_errors_are_one_line(tmp_path):
    out = tmp_path / "D"
    run(tmp_path, "marmot", "simulate", "--messages", "5", "--commits", "1", "--races", "0", "--out", str(out))
    run(tmp_path, "init")
    missing = one_line_error(run(tmp_path, *marmot_join_args(out), check=False, TESSERA_KEY_FILE=""))
    assert "this database is encrypted: wrong key or no key given" in missing
    run(tmp_path, *marmot_join_args(out))
    run(tmp_path, "ingest", "--protocol", "marmot", str(out / "relay.jsonl"))
    wrong = run(tmp_path, "tick", "--until-idle", check=False, TESSERA_MARMOT_STATE_KEY="ab" * 32)
    assert wrong.returncode == 1 and "Traceback" not in wrong.stderr
    assert "TESSERA_MARMOT_STATE_KEY is deprecated" in wrong.stderr  # the old variable wins, and says so
    assert wrong.stderr.strip().splitlines()[-1].startswith("Error: cannot decrypt marmot group state: wrong key file?")
    status = json.loads(run(tmp_path, "status", "--json").stdout)
    assert status["incoming"] > 0 and status["parked"] == 0  # nothing was consumed by a misconfiguration
    assert "no joined marmot group" in one_line_error(
        run(tmp_path, "marmot", "history", "--group", "cd" * 32, check=False)
    )
    assert "group id or nostr group id in hex" in one_line_error(
        run(tmp_path, "marmot", "history", "--group", "nope", check=False)
    )
    assert "CREATED_AT:ID" in one_line_error(
        run(
            tmp_path,
            "marmot",
            "history",
            "--group",
            json.loads((out / "expected.json").read_text())["group"],
            "--before",
            "yesterday",
            check=False,
        )
    )
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert "JSON object" in one_line_error(
        run(
            tmp_path,
            "marmot",
            "join",
            "--identity",
            str(bad),
            "--welcome",
            str(bad),
            check=False,
        )
    )


def test_simulate_refuses_impossible_settings(tmp_path):
    error = one_line_error(
        run(tmp_path, "marmot", "simulate", "--out", str(tmp_path / "x"), "--races", "3", "--commits", "2", check=False)
    )
    assert "--races" in error


@pytest.mark.parametrize("args", [["--members", "1"], ["--messages", "-1"], ["--order", "sideways"]])
def test_simulate_refuses_out_of_range_values_in_one_line(tmp_path, args):
    proc = run(tmp_path, "marmot", "simulate", "--out", str(tmp_path / "x"), *args, check=False)
    assert proc.returncode == 2 and args[0] in proc.stderr and "Traceback" not in proc.stderr


def test_simulate_is_deterministic_for_a_seed(tmp_path):
    for name in ("a", "b"):
        run(tmp_path, "marmot", "simulate", "--messages", "30", "--seed", "5", "--out", str(tmp_path / name))
    for name in ("relay.jsonl", "expected.json", "observer.identity.json", "observer.welcome.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "state.key").read_text() != (tmp_path / "b" / "state.key").read_text()
