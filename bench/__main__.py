"""Tessera's benchmark suite: every figure beside the ceiling or peer measured in the same run.

    python -m bench [NAME ...] [--events N] [--quick] [--json FILE] [--markdown FILE] [--keep DIR]
                    [--executors N,N,...] [--resume [--again NAME ...]]

NAME picks benchmarks (all by default): see ``--list``.  Each benchmark's figures are printed (and written to
``--json``) as soon as it ends, so a long run stopped early keeps what it measured.  ``--events`` sets the run's size (10,000,000 by
default; ``--quick`` makes it 100,000 and runs one round of each comparison instead of three); each
benchmark scales its own workloads from it and names the sizes in its figures.  The run ends with one
table — our figure, the ceiling or peer, the ratio, the target, met or not — and ``--json`` writes the same
figures to a file, with the command, commit, start and end, and the load average around the run;
``--markdown`` writes the same as the Markdown table docs/benchmarks.md keeps.  ``--keep DIR`` keeps the database files in DIR; ``--executors`` sets the executor counts
the cluster benchmark measures (1,2,4 by default).  ``--resume`` continues a run that stopped (the machine
was taken back, a session ended): with the same command, the benchmarks the ``--json`` file says were finished
keep their figures and only the rest run, on the same commit only (see ``resume.py``).

The individual scripts (``python bench/append.py`` ...) print more detail about their own benchmark.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import append
import cli_start
import encryption
import fill
import history
import marmot_mdk
import mls
import rebuild
import tick
import xmtp
import xmtp_node
import xmtp_real
from common import Workdir, console
from report import RunContext, markdown
from resume import CannotResume, earlier_run
from suite import Benchmark, Figure, Run, print_table, write_json

BENCHMARKS: dict[str, tuple[Benchmark, str]] = {
    "append": (append.figures, "event append per item and batched: raw apsw, the eventsourcing library"),
    "tick": (tick.figures, "process_incoming per item and in micro-batches: the raw loop plus decoding"),
    "fill": (fill.figures, "a sustained fill: first and last tenth, bytes per event, history pages at the end"),
    "xmtp": (xmtp.figures, "the XMTP client catching up through tessera serve: the engine's decrypt rate"),
    "rebuild": (rebuild.figures, "a full rebuild, verified: Spark local[2] and the local engine, the daemon's rate"),
    "cluster": (
        rebuild.cluster_figures,
        "the same rebuild on a standalone Spark cluster, per executor count (--executors)",
    ),
    "history": (history.figures, "newest and next history pages at the run's size: Marmot's and the server store's"),
    "mls": (mls.figures, "the MLS engine's commits and decryption beside ts-mls and the crypto alone"),
    "cli_start": (cli_start.figures, "tessera --help and tessera status: wall time beside python -c pass"),
    "encryption": (
        encryption.figures,
        "append, tick, a Marmot message, history pages: encrypted against plaintext, same run",
    ),
    "marmot": (marmot_mdk.figures, "Marmot end to end on MDK's stream: parse + verify + decrypt, and MDK itself"),
    "xmtp-node": (xmtp_node.figures, "real libxmtp clients sending through tessera serve's XMTP node and the ceiling"),
    "xmtp-real": (
        xmtp_real.figures,
        "the node profile against libxmtp: catching up on 10,000 of its texts, adds in a 100-member group",
    ),
}
FULL_EVENTS = 10_000_000
QUICK_EVENTS = 100_000
#: The smallest run every benchmark completes (the test suite's smoke run): the history benchmark pages back
#: from cursors with 200 rumors behind them, so a smaller run has none to page from.
SMALLEST_EVENTS = 300


def executor_counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        counts = ()
    if not counts or min(counts) < 1 or list(counts) != sorted(set(counts)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a rising list of executor counts like 1,2,4")
    return counts


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    found = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    found.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (default: all)")
    found.add_argument(
        "--events", type=int, help=f"events in the run (default {FULL_EVENTS:,}, at least {SMALLEST_EVENTS})"
    )
    found.add_argument("--quick", action="store_true", help=f"{QUICK_EVENTS:,} events, one round per comparison")
    found.add_argument("--json", metavar="FILE", help="write the figures to FILE as JSON")
    found.add_argument("--markdown", metavar="FILE", help="write the figures to FILE as a Markdown table")
    found.add_argument("--keep", metavar="DIR", help="keep the database files in DIR")
    found.add_argument(
        "--executors",
        type=executor_counts,
        default=(1, 2, 4),
        metavar="N,N,...",
        help="executor counts the cluster benchmark measures (default 1,2,4)",
    )
    found.add_argument(
        "--resume",
        action="store_true",
        help="continue the run whose --json FILE an earlier, stopped run of this commit wrote: keep the "
        "benchmarks it finished, run the rest (FILE absent: start afresh)",
    )
    found.add_argument(
        "--again",
        metavar="NAME",
        action="append",
        default=[],
        help="with --resume: run NAME again although the run finished it (its figures are replaced); repeatable",
    )
    found.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = found.parse_args(argv)
    if args.resume and not args.json:
        found.error("--resume needs --json FILE: the file the run being continued wrote")
    if args.again and not args.resume:
        found.error("--again measures a finished benchmark of a resumed run again: give --resume too")
    unknown_again = sorted(set(args.again) - set(BENCHMARKS))
    if unknown_again:
        found.error(f"no benchmark {', '.join(unknown_again)} to run --again; there are {', '.join(BENCHMARKS)}")
    unknown = sorted(set(args.names) - set(BENCHMARKS))
    if unknown:
        found.error(f"no benchmark {', '.join(unknown)}; there are {', '.join(BENCHMARKS)}")
    if args.events is not None and args.events < SMALLEST_EVENTS:
        found.error(f"--events must be at least {SMALLEST_EVENTS} (the smallest run every benchmark completes)")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.list:
        for name, (_, what) in BENCHMARKS.items():
            console.print(f"{name:10} {what}")
        return 0
    events = args.events or (QUICK_EVENTS if args.quick else FULL_EVENTS)
    names = args.names or list(BENCHMARKS)
    context = RunContext.now(argv)
    earlier = None
    if args.resume:
        try:
            earlier = earlier_run(args.json, events=events, quick=args.quick, commit=context.commit)
        except CannotResume as refused:
            print(f"python -m bench: error: cannot resume: {refused}", file=sys.stderr)
            return 2
    completed = [name for name in names if earlier is not None and name in earlier.completed and name not in args.again]
    figures: list[Figure] = [f for f in (earlier.figures if earlier else ()) if f.benchmark in completed]
    if earlier is not None and completed == names:  # finished already: its files stay as they are
        print_table(figures, f"python -m bench {' '.join(names)}: {events:,} events, finished {earlier.seconds:,.0f} s")
        return 0
    if earlier is not None:
        context = earlier.context.continued()
        console.print(f"resuming the run of {context.started} UTC: {', '.join(earlier.completed)} done")
    measured_before = earlier.seconds if earlier is not None else 0.0
    started = time.perf_counter()

    def write_files(run: Run) -> None:
        seconds = measured_before + time.perf_counter() - started
        if args.json:
            write_json(args.json, figures, run, {**context.as_json(seconds), "completed": completed})
        if args.markdown:
            Path(args.markdown).write_text(markdown(figures, context, seconds))

    with Workdir(args.keep) as work:
        run = Run(events=events, quick=args.quick, work=work, executors=args.executors)
        for name in names:
            if name in completed:
                continue
            console.rule(f"{name}: {BENCHMARKS[name][1]}")
            context = context.paced(name)
            found = BENCHMARKS[name][0](run)
            figures += found
            completed.append(name)
            # Each benchmark's figures as soon as it ends, and the JSON so far: a long run stopped later
            # keeps what it measured.
            print_table(found, f"{name}: {events:,} events")
            write_files(run)
        seconds = measured_before + time.perf_counter() - started
        print_table(figures, f"python -m bench {' '.join(names)}: {events:,} events, {seconds:,.0f} s")
        write_files(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
