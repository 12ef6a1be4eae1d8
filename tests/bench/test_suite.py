"""``python -m bench --quick`` at its smallest size, CI's smoke run: every benchmark completes and reports each of
its figures.

Speeds are never asserted here (they live in docs/benchmarks.md, measured by the full run); what is
asserted is that each figure is there, measured (a positive number), beside its ceiling or peer, with its
target — so a benchmark that breaks, or silently stops reporting a figure, fails the suite.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._peers import peer_missing
from tests.bench import run

ROOT = Path(__file__).resolve().parents[2]

#: Each benchmark's figures, by the start of their names, and whether each has a ceiling and a target.
EXPECTED = {
    "append": [
        ("batched (1,000/txn), ", True, True),
        ("per item (1/txn), ", True, True),
        ("per item (1/txn) against eventsourcing 9.5.6, its defaults", True, True),
        ("per item (1/txn) against eventsourcing with synchronous=NORMAL", True, False),
        ("batched (1,000/txn) against eventsourcing 9.5.6, its defaults", True, True),
        ("batched (1,000/txn) against eventsourcing with synchronous=NORMAL", True, False),
    ],
    "tick": [
        ("process_incoming, 1 item/txn, ", True, True),
        ("process_incoming, micro-batches of ", True, True),
        ("decoding alone", False, False),
    ],
    "fill": [
        ("append rate, last tenth of ", True, True),
        ("append rate over all ", False, False),
        ("bytes written to the disk an event during the fill of ", False, False),
        ("footprint at ", False, True),
        ("newest-50 page p99 at ", False, True),
        ("next page by cursor p99 at ", False, True),
        ("newest-50 page p50 at ", False, False),
        ("longest wait for the write lock during the fill of ", False, True),
        ("longest wait for the write lock during the fill of 300 events, a writer outside Tessera", False, False),
        ("longest hold of the write lock by the filling process, ", False, False),
    ],
    "xmtp": [("catch-up through tessera serve, ", True, True)],
    "encryption": [
        ("append per item (1/txn), ", True, True),
        ("append batched (1,000/txn), ", True, True),
        ("tick per item (1/txn), ", True, True),
        ("Marmot message end to end (pipeline, 1/txn), ", True, False),
        ("Marmot history, 1,000 rumors: newest page of 50, p99, encrypted", True, True),
        ("Marmot history, 1,000 rumors: next page by cursor, p99, encrypted", True, True),
    ],
    "rebuild": [
        ("Spark local[2] rebuild of 300 events against the daemon's incremental projection", True, True),
        ("Spark local[2] rebuild of 300 events against the local engine", True, True),
        ("export stage's share of a local rebuild of 300 events", False, False),
        ("export stage's share of a spark rebuild of 300 events", False, False),
        ("--verify's share of a Spark rebuild of 300 events", False, True),
    ],
    # One executor count: each count is one more Spark application, whose executors' JVMs take most of the
    # benchmark's time at this size; a second count would only add its figure beside the first's.
    "cluster": [("Spark standalone, 1 executor of 1 core, rebuild of 300 events", False, False)],
    "history": [
        ("Marmot history, 300 rumors in one group: newest page of 50, p99", False, True),
        ("Marmot history, 300 rumors in one group: next page by cursor, p99", False, True),
        ("Marmot history, 300 rumors in one group: next page by cursor, the file out of the page cache", False, False),
        ("server store history (Store.history), 300 messages in one group: newest page of 50, p99", False, True),
        ("server store history (Store.history), 300 messages in one group: next page by cursor, p99", False, True),
        (
            "server store history (Store.history), 300 messages in one group: next page by cursor, the file",
            False,
            False,
        ),
        ("server store, 300 messages in one group: bytes per stored message", False, True),
    ],
    "mls": [
        ("add commit processed, 10-member group, against ts-mls", True, True),
        ("update commit processed, 10-member group, against ts-mls", True, True),
        ("remove commit processed, 10-member group, against ts-mls", True, True),
        ("application messages decrypted in order, 10-member group, against ts-mls", True, True),
        ("application messages decrypted in order, 10-member group, against the AEAD", True, True),
    ],
    "cli_start": [
        ("tessera --help: wall time, median of ", True, True),
        ("tessera status: wall time, median of ", True, True),
        ("tessera marmot --help: wall time, median of ", True, False),
    ],
    "marmot": [
        ("end to end, one transaction per message, the median round (", True, True),
        ("end to end, micro-batches, the median round (", True, True),
        ("end to end, one transaction per message, against the old ceiling (", True, False),
        ("end to end against MDK 0.8.0's process_message, the worst round (", True, True),
        ("backfill, the writer alone (", False, False),
        ("backfill, ", True, False),
    ],
    "xmtp-node": [
        ("sending through tessera serve's XMTP node (", True, True),
        ("one send, p50 (", True, False),
        ("one send, p99 (", True, False),
        ("the node's CPU per message (", True, True),
    ],
    "xmtp-real": [
        ("catch-up on 500 texts libxmtp members sent, one sync pass (", True, True),
        ("the same catch-up without the decrypt-ahead helper, TESSERA_XMTP_DECRYPT_AHEAD=0 (", True, False),
        ("adds to a 10-member group, one inbox per commit, ", True, False),
    ],
}


def test_every_benchmark_reports_every_figure(tmp_path: Path) -> None:
    out, table = tmp_path / "figures.json", tmp_path / "figures.md"
    done = run(
        "-m", "bench", "--quick", "--events", "300", "--executors", "1", "--json", str(out), "--markdown", str(table),
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(out.read_text())
    assert document["events"] == 300 and document["quick"] and "cores" in document["machine"]
    assert document["command"] == f"python -m bench --quick --events 300 --executors 1 --json {out} --markdown {table}"
    assert document["started"] <= document["ended"] and document["seconds"] > 0
    figures = document["figures"]
    assert_markdown_names_every_figure(table.read_text(), document)
    missing = [f["note"] for f in figures if f["note"].startswith("peer missing")]
    if missing:
        peer_missing(missing[0])
    for benchmark, expected in EXPECTED.items():
        reported = [f for f in figures if f["benchmark"] == benchmark]
        assert len(reported) == len(expected), [f["name"] for f in reported]
        for figure, (start, has_ceiling, has_target) in zip(reported, expected, strict=True):
            assert figure["name"].startswith(start), figure["name"]
            assert figure["ours"] > 0 and figure["unit"]
            assert (figure["ceiling"] is not None and figure["ceiling"] > 0) == has_ceiling, figure
            assert bool(figure["target"]) == has_target and (figure["met"] is not None) == has_target, figure
    assert (
        "python -m bench append tick fill xmtp rebuild cluster history mls cli_start encryption marmot xmtp-node "
        "xmtp-real" in done.stdout
    )


def assert_markdown_names_every_figure(text: str, document: dict[str, Any]) -> None:
    """The Markdown table: the run's command and commit first, a row per figure, the count of targets met."""
    head, *rest = text.splitlines()
    assert head.startswith(f"`{document['command']}` — commit {document['commit']}, {document['started']}"), head
    rows = [line for line in rest if line.startswith("| ") and not line.startswith("| benchmark |")]
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == [f["benchmark"] for f in document["figures"]]
    held = [f for f in document["figures"] if f["met"] is not None]
    assert rest[-1] == f"{sum(f['met'] for f in held)} of {len(held)} targets met."


@pytest.mark.parametrize("counts", ["0,1", "2,1", "one", ""])
def test_executor_counts_must_be_a_rising_list(counts: str) -> None:
    done = run("-m", "bench", "cluster", "--executors", counts)
    assert done.returncode == 2
    assert "is not a rising list of executor counts like 1,2,4" in done.stderr


def test_a_run_smaller_than_every_benchmark_completes_is_refused() -> None:
    done = run("-m", "bench", "--events", "299")
    assert done.returncode == 2
    assert "--events must be at least 300 (the smallest run every benchmark completes)" in done.stderr


def test_an_unknown_benchmark_is_refused_in_one_line() -> None:
    done = run("-m", "bench", "nosuch")
    assert done.returncode == 2
    assert "no benchmark nosuch; there are append, tick, fill, xmtp" in done.stderr


def test_the_state_bytes_script_prints_both_parts_of_a_group_state() -> None:
    done = run("bench/state_bytes.py", "--sizes", "2", "--messages", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    row = next(line for line in done.stdout.splitlines() if line.strip("│ ").startswith("2 "))
    whole, _, epoch_part, ratchets, _ = (cell.strip() for cell in row.strip("│").split("│")[1:])
    assert 0 < _bytes(ratchets) < _bytes(epoch_part) < _bytes(whole)


def _bytes(cell: str) -> int:
    return int(cell.removesuffix(" B").replace(",", ""))


def test_the_per_item_profile_shows_each_path_beside_its_raw_loop() -> None:
    done = run("bench/per_item_profile.py", "--items", "60", "--top", "5")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for path in ("process_incoming", "append (run_command)"):
        assert f"{path}: the raw loop's statements" in out and f"{path}: Python by function" in out
    # One item alone in its transaction: BEGIN, the item's statements, the tally, COMMIT; no probe is repeated.
    assert "SELECT 1 FROM deferred WHERE partition_key" not in out


def test_the_per_item_bounds_run_every_way_beside_the_ceiling() -> None:
    done = run("bench/per_item_bounds.py", "--items", "60", "--rounds", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    ways = [line.split("│")[1].strip() for line in done.stdout.splitlines() if line.startswith("│")]
    assert ways == ["as it is", "hook", "tally", "claim", "checks", "validators", "all", "ceiling: raw loop + decoding"]


def test_the_backfill_cpu_harness_times_copies_of_one_fixture(tmp_path: Path) -> None:
    fixture = tmp_path / "stream"
    done = run("bench/backfill_cpu.py", "--fixture", str(fixture), "--messages", "30", "--runs", "1", timeout=300)
    if done.returncode != 0 and "PeerUnavailable" in done.stderr:
        peer_missing(done.stderr.strip().splitlines()[-1])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "run 1: CPU " in done.stdout and "median CPU " in done.stdout
    assert (fixture / "joined.db").exists() and len(json.loads((fixture / "stream.json").read_text())["events"]) == 30
    again = run("bench/backfill_cpu.py", "--fixture", str(fixture), "--runs", "1", timeout=300)  # the same fixture
    assert again.returncode == 0 and "median CPU " in again.stdout, again.stderr[-3000:]


def test_the_markdown_table_escapes_cells_and_counts_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    from report import RunContext, markdown
    from suite import Figure

    figures = [
        Figure("a", "rate | with a bar", 36_986.4, "events/s", 40_011.0, "raw", "ratio", 0.8),
        Figure("b", "p99", 2.0, "ms", goal_kind="at_most", goal=1.0, note="loaded"),
        Figure("c", "context", 5.0, "x"),
    ]
    context = RunContext("python -m bench a b c", "abc1234+changes", "2026-11-29T14:00:00", 0.5, "2 cores")
    lines = markdown(figures, context, 61.0).splitlines()
    assert lines[0].startswith("`python -m bench a b c` — commit abc1234+changes, 2026-11-29T14:00:00 to ")
    assert "(61 s); load average 0.50 at the start" in lines[0] and lines[0].endswith("; 2 cores.")
    # Figures read as the console table prints them, never in exponent notation.
    assert lines[4] == "| a | rate \\| with a bar | 36,986 events/s | 40,011 raw | 92% | ≥ 80% | met |"
    assert lines[5] == "| b | p99 (loaded) | 2 ms |  |  | ≤ 1 ms | **not met** |"
    assert lines[6] == "| c | context | 5 x |  |  |  |  |"
    assert lines[-1] == "1 of 2 targets met."


def _bench_main(monkeypatch: pytest.MonkeyPatch) -> Any:
    """bench/__main__.py as a module of its own (its name would be taken by pytest's)."""
    import importlib.util

    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("bench_main_under_test", ROOT / "bench" / "__main__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_stopped_run_resumes_with_the_benchmarks_it_had_not_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench_main = _bench_main(monkeypatch)
    import report
    from suite import Figure

    monkeypatch.setattr(report, "_commit", lambda: "abc1234")
    ran: list[str] = []
    stops_left = [1]  # the second benchmark is stopped once

    def first(run: Any) -> list[Any]:
        ran.append("first")
        return [Figure("first", "rate", 10.0, "x/s", 20.0, "raw", "ratio", 0.4)]

    def second(run: Any) -> list[Any]:
        ran.append("second")
        if stops_left[0]:
            stops_left[0] -= 1
            raise KeyboardInterrupt  # the machine was taken back in the middle of it
        return [Figure("second", "p99", 2.0, "ms", goal_kind="at_most", goal=1.0)]

    monkeypatch.setattr(bench_main, "BENCHMARKS", {"first": (first, "one"), "second": (second, "two")})
    out, table = tmp_path / "run.json", tmp_path / "run.md"
    argv = ["--events", "300", "--json", str(out), "--markdown", str(table), "--resume"]
    with pytest.raises(KeyboardInterrupt):
        bench_main.main(argv)
    stopped = json.loads(out.read_text())
    assert stopped["completed"] == ["first"] and list(stopped["pace"]) == ["first"]

    assert bench_main.main(argv) == 0
    assert ran == ["first", "second", "second"]  # the first benchmark was not run again
    document = json.loads(out.read_text())
    assert document["completed"] == ["first", "second"]
    assert [f["benchmark"] for f in document["figures"]] == ["first", "second"]
    assert len(document["resumed"]) == 1
    # The machine's pace as each benchmark began: the first's kept from the first sitting, the second's anew.
    assert document["pace"]["first"] == stopped["pace"]["first"] and list(document["pace"]) == ["first", "second"]
    assert all(0 < ms < 10_000 for ms in document["pace"].values())
    head, _, pace_line = table.read_text().splitlines()[:3]
    assert f", resumed {document['resumed'][0]} to " in head and "s measuring)" in head
    assert pace_line.startswith("`python -c pass` as each benchmark began (the machine's pace): first ")

    finished = out.read_text(), table.read_text()
    assert bench_main.main(argv) == 0  # a finished run resumed runs nothing and leaves its files as they were
    assert ran == ["first", "second", "second"] and (out.read_text(), table.read_text()) == finished


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"commit": "0ld0ld0"}, "was measured at commit 0ld0ld0, this checkout is abc1234"),
        ({"events": 1000}, "holds a run of 1,000 events; this one is of 300"),
        ({"figures": "none"}, "is not a run's JSON"),
    ],
)
def test_a_run_is_only_resumed_on_its_own_commit_and_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], change: dict[str, Any],
    refusal: str,
) -> None:  # fmt: skip
    bench_main = _bench_main(monkeypatch)
    import report

    monkeypatch.setattr(report, "_commit", lambda: "abc1234")
    monkeypatch.setattr(bench_main, "BENCHMARKS", {"first": (lambda run: [], "one")})
    out = tmp_path / "run.json"
    argv = ["--events", "300", "--json", str(out), "--resume"]
    assert bench_main.main(argv) == 0
    out.write_text(json.dumps({**json.loads(out.read_text()), **change}))
    assert bench_main.main(argv) == 2
    assert refusal in capsys.readouterr().err


def test_resume_needs_the_json_of_the_run_it_continues() -> None:
    done = run("-m", "bench", "--resume")
    assert done.returncode == 2
    assert "--resume needs --json FILE" in done.stderr


def test_again_measures_a_finished_benchmark_of_a_resumed_run_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench_main = _bench_main(monkeypatch)
    import report
    from suite import Figure

    monkeypatch.setattr(report, "_commit", lambda: "abc1234")
    rates = iter([10.0, 30.0])
    monkeypatch.setattr(
        bench_main,
        "BENCHMARKS",
        {
            "first": (lambda run: [Figure("first", "rate", next(rates), "x/s")], "one"),
            "second": (lambda run: [Figure("second", "p99", 2.0, "ms")], "two"),
        },
    )
    out = tmp_path / "run.json"
    argv = ["--events", "300", "--json", str(out), "--resume"]
    assert bench_main.main(argv) == 0
    assert bench_main.main([*argv, "--again", "first"]) == 0
    document = json.loads(out.read_text())
    assert [(f["benchmark"], f["ours"]) for f in document["figures"]] == [("second", 2.0), ("first", 30.0)]
    assert sorted(document["completed"]) == ["first", "second"]


def test_again_needs_resume_and_a_real_benchmark() -> None:
    alone = run("-m", "bench", "--again", "fill")
    assert alone.returncode == 2 and "--again measures a finished benchmark of a resumed run again" in alone.stderr
    unknown = run("-m", "bench", "--json", "x.json", "--resume", "--again", "nosuch")
    assert unknown.returncode == 2 and "no benchmark nosuch to run --again" in unknown.stderr


def test_the_tick_benchmark_holds_each_figure_to_ceilings_measured_beside_it(tmp_path: Path) -> None:
    # Outside --quick: three rounds, each measuring the raw loops beside ours; the figure is the median rate and its
    # note shows every round's ratio, so a drift of the machine between two single measurements cannot pose as one.
    out = tmp_path / "tick.json"
    done = run("-m", "bench", "tick", "--events", "300", "--json", str(out), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    per_item, batched, _ = json.loads(out.read_text())["figures"]
    for figure in (per_item, batched):
        rounds = figure["note"].removeprefix("rounds: ").split(", ")
        assert figure["note"].startswith("rounds: ") and len(rounds) == 3, figure
        assert all(float(ratio.removesuffix("%")) > 0 for ratio in rounds), figure
