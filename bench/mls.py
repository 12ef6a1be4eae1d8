"""The RFC 9420 engine: commits and application messages by group size, beside ts-mls and the crypto ceiling.

    python bench/mls.py [--quick] [--json FILE] [--sizes 2,10,100,1000] [--commit-sizes 10000]
                        [--messages N] [--runs N] [--suite ID] [--no-ts-mls]

Per group size (2, 10, 100, 1,000; 10,000 for commits only): alice (leaf
0) creates an Add (a new member's KeyPackage, no path, with its Welcome),
an Update (an empty commit, with a path) and a Remove (a middle leaf, which
requires a path), and bob (leaf 1) processes each; the fastest of several
runs from the same states (states are immutable values, so every run does
the same work).  One more run of each is counted: HPKE seals and opens,
hashes and DeriveKeyPair runs, by wrapping the suite classes' methods for
its duration (the engine is not edited).  Then alice sends application
messages that bob decrypts in order, beside the ceiling: the same messages'
AEAD calls and key derivations alone, measured in the same run.

Groups are built in bulk, honestly but not by history: one commit by alice
adds all other members at once (no path, so the parent nodes stay blank, as
in any freshly created group), bob joins from its Welcome, and alice commits
once with a path.  Building is timed and shown but is not a measured
operation.  Where Node.js 20+ is present, ts-mls (the pinned version of the
interop tests) builds the same groups and runs the same operations in the
same run, timed inside Node (bench/mls_ts.mjs).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from common import console, report
from mls_engine import (
    APPLICATION_CLOCK,
    OPERATIONS,
    ApplicationResult,
    Group,
    OperationResult,
    build_group,
    measure_application,
    measure_operation,
    profile_decrypting,
    profile_processing,
)
from mls_ts import TsMlsUnavailable, node_and_install, node_version, run_ts_mls
from suite import Figure, Run

from protocols.libraries.mls.crypto import CipherSuite, suite

QUICK = {"sizes": (2, 10, 100), "commit_sizes": (), "messages": 200, "runs": 3}
DECRYPT_TARGET = 0.5  # application decrypt >= 50% of its ceiling (issue 13)
GROWTH_SLACK = 1.25  # counted work may exceed the log2 ratio by this much before it is called super-logarithmic


def runs_for(members: int, override: int | None) -> int:
    """Timed runs per operation: fewer as one run gets longer."""
    if override is not None:
        return override
    return 15 if members <= 100 else 5 if members <= 1000 else 3


def sizes(text: str) -> tuple[int, ...]:
    found = tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())
    if any(size < 2 for size in found):
        raise argparse.ArgumentTypeError("a group has at least 2 members")
    return found


def arguments() -> argparse.Namespace:
    found = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    found.add_argument("--sizes", type=sizes, default=(2, 10, 100, 1000), help="group sizes for everything")
    found.add_argument("--commit-sizes", type=sizes, default=(10_000,), help="extra sizes for commits only")
    found.add_argument("--messages", type=int, default=1000, help="application messages per size")
    found.add_argument("--payload", type=int, default=100, help="application data bytes per message")
    found.add_argument("--runs", type=int, help="timed runs per operation (default 15, 5 at 1,000+, 3 at 10,000)")
    found.add_argument("--suite", type=int, default=1, help="cipher suite (1..7)")
    found.add_argument("--quick", action="store_true", help="sizes 2,10,100, 200 messages, 3 runs: a smoke run")
    found.add_argument("--no-ts-mls", action="store_true", help="do not run ts-mls even where Node.js is present")
    found.add_argument(
        "--cpu-time",
        action="store_true",
        help="time application messages and their ceilings in CPU time, not wall time (a loaded machine)",
    )
    found.add_argument("--json", type=Path, help="also write every figure to this file")
    found.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="print cProfile's top N functions of bob's processing of each commit kind at the largest size, "
        "and of decrypting the application messages at the largest size that has them",
    )
    args = found.parse_args()
    if args.quick:
        for name, value in QUICK.items():
            setattr(args, name, value)
    return args


# --- measuring -------------------------------------------------------------------------------


@attrs.define
class Results:
    """Everything one run measured, for the tables and ``--json``."""

    suite: CipherSuite
    builds: dict[int, dict[str, float]] = attrs.Factory(dict)
    operations: list[OperationResult] = attrs.Factory(list)
    application: list[ApplicationResult] = attrs.Factory(list)
    ts_mls: list[dict[str, Any]] = attrs.Factory(list)
    ts_mls_note: str = ""


def measure_engine(args: argparse.Namespace, results: Results) -> None:
    cs, payload = results.suite, bytes(args.payload)
    for members in sorted({*args.sizes, *args.commit_sizes}):
        with console.status("") as status:
            group = build_group(cs, members, status.update)
            results.builds[members] = group.build_seconds
            runs = runs_for(members, args.runs)
            for operation in OPERATIONS:
                status.update(f"{members:,}-member group: {operation} commits ({runs} runs each side + 1 counted)")
                results.operations.append(measure_operation(group, operation, runs))
            if members in args.sizes:
                status.update(f"{members:,}-member group: {args.messages:,} application messages and the ceiling")
                results.application.append(measure_application(group, args.messages, payload))
        print_size(group, results)
        if args.profile:
            print_profiles(group, args)


def print_profiles(group: Group, args: argparse.Namespace) -> None:
    """cProfile's view of bob's side at the largest sizes: each commit kind, and the application messages."""
    if group.members == max((*args.sizes, *args.commit_sizes)):
        for operation in OPERATIONS:
            console.rule(f"profile: bob processes one {operation} commit, {group.members:,} members")
            print(profile_processing(group, operation, args.profile))
    if args.sizes and group.members == max(args.sizes):
        console.rule(f"profile: bob decrypts {args.messages:,} application messages, {group.members:,} members")
        print(profile_decrypting(group, args.messages, bytes(args.payload), args.profile))


def print_size(group: Group, results: Results) -> None:
    done = [r for r in results.operations if r.members == group.members]
    summary = ", ".join(f"{r.operation} {_ms(r.create_s)}/{_ms(r.process_s)} ms" for r in done)
    console.print(f"[dim]{group.members:,} members built in {sum(group.build_seconds.values()):.1f} s; {summary}[/]")


def measure_ts_mls(args: argparse.Namespace, results: Results) -> dict[str, str]:
    """ts-mls's figures into ``results``; returns its versions (empty when it did not run, with the reason noted)."""
    if args.no_ts_mls:
        results.ts_mls_note = "ts-mls not run (--no-ts-mls)"
        return {}
    try:
        with console.status("finding Node.js and the pinned ts-mls (installing it the first time)"):
            node, install, version = node_and_install()
    except TsMlsUnavailable as error:
        results.ts_mls_note = f"ts-mls not run: {error}"
        return {}
    runs = {size: runs_for(size, args.runs) for size in args.sizes}
    with console.status("ts-mls") as status:
        results.ts_mls = run_ts_mls(
            node,
            install,
            suite=results.suite.id,
            sizes=args.sizes,
            runs=runs,
            messages=args.messages,
            payload_bytes=args.payload,
            status=status.update,
        )
    return {"node": node_version(node), "ts-mls": version}


# --- tables ----------------------------------------------------------------------------------


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:,.1f}"


def _us(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e6:,.0f}"


def _ts_operation(results: Results, members: int, operation: str) -> dict[str, Any] | None:
    for size in results.ts_mls:
        if size["members"] == members:
            found: dict[str, Any] = next(o for o in size["operations"] if o["operation"] == operation)
            return found
    return None


def _ts_application(results: Results, members: int) -> dict[str, Any] | None:
    return next((size["application"] for size in results.ts_mls if size["members"] == members), None)


def build_table(results: Results) -> None:
    steps = ("key packages", "adding commit", "bob joins", "alice's first path")
    builds = [(members, "engine", seconds) for members, seconds in results.builds.items()]
    builds += [(size["members"], "ts-mls", size["build_seconds"]) for size in results.ts_mls]
    rows = [
        (f"{members:,}", implementation, *(f"{seconds[step]:.2f}" for step in steps))
        for members, implementation, seconds in sorted(builds, key=lambda build: (build[0], build[1]))
    ]
    report("Building the groups (seconds; not a measured operation)", rows, ("members", "implementation", *steps))


def commit_table(results: Results) -> None:
    rows = []
    for r in results.operations:
        ts = _ts_operation(results, r.members, r.operation)
        ratio = "—"
        if ts is not None and ts["process_s"] is not None and r.process_s is not None:
            ratio = f"{ts['process_s'] / r.process_s:.1f}×"
        rows.append(
            (
                f"{r.members:,}",
                r.operation,
                _ms(r.create_s),
                _ms(r.process_s),
                f"{r.commit_bytes / 1024:,.1f}",
                f"{r.welcome_bytes / 1024:,.1f}" if r.welcome_bytes else "",
                "" if ts is None else _ms(ts["create_s"]),
                "" if ts is None else _ms(ts["process_s"]),
                ratio,
            )
        )
    report(
        "Commits: alice creates, bob processes (ms, best of the runs; — at 2 members: the Remove removes bob)",
        rows,
        (
            "members",
            "commit",
            "create",
            "process",
            "commit KiB",
            "Welcome KiB",
            "ts-mls create",
            "ts-mls process",
            "ts-mls / engine process",
        ),
    )


def growth_table(results: Results) -> None:
    rows = []
    for operation in OPERATIONS:
        for r in (r for r in results.operations if r.operation == operation):
            p, c = r.process_counts, r.create_counts
            rows.append(
                (
                    operation,
                    f"{r.members:,}",
                    f"{math.log2(r.members):.1f}",
                    _us(r.process_s),
                    *(("—",) * 3 if p is None else (p.hpke, p.hashes, p.key_pairs)),
                    _us(r.create_s),
                    c.hpke,
                    c.hashes,
                    c.key_pairs,
                )
            )
    report(
        "Growth: one commit's work by group size (counted in a separate run; µs are the times above)",
        rows,
        (
            "commit",
            "members",
            "log2 n",
            "process µs",
            "HPKE",
            "hashes",
            "DeriveKeyPair",
            "create µs",
            "HPKE",
            "hashes",
            "DeriveKeyPair",
        ),
    )


def application_table(results: Results) -> None:
    rows = []
    for r in results.application:
        ts = _ts_application(results, r.members) or {}
        for side, engine, ceiling, signed, ts_rate in (
            (
                "encrypt",
                r.encrypt_per_s,
                r.ceiling_encrypt_per_s,
                r.signed_ceiling_encrypt_per_s,
                ts.get("encrypt_per_s"),
            ),
            (
                "decrypt",
                r.decrypt_per_s,
                r.ceiling_decrypt_per_s,
                r.signed_ceiling_decrypt_per_s,
                ts.get("decrypt_per_s"),
            ),
        ):
            rows.append(
                (
                    f"{r.members:,}",
                    side,
                    f"{ceiling:,.0f}",
                    f"{signed:,.0f}",
                    f"{engine:,.0f}",
                    f"{engine / ceiling:.1%}",
                    f"{engine / signed:.1%}",
                    "" if ts_rate is None else f"{ts_rate:,.0f}",
                )
            )
    messages = results.application[0].messages if results.application else 0
    payload = results.application[0].payload_bytes if results.application else 0
    report(
        f"Application messages: {messages:,} of {payload} bytes, alice encrypts, bob decrypts in order (per second)",
        rows,
        ("members", "side", "AEAD + KDF ceiling", "+ signature", "engine", "vs ceiling", "vs + signature", "ts-mls"),
    )


# --- targets ---------------------------------------------------------------------------------


def growth_verdicts(results: Results) -> list[dict[str, Any]]:
    """Per commit kind: does bob's counted HPKE + hash work grow like log2 n between the smallest size >= 10 and the largest?"""
    verdicts = []
    for operation in OPERATIONS:
        measured = [r for r in results.operations if r.operation == operation and r.process_counts and r.members >= 10]
        if len(measured) < 2:
            continue
        low, high = measured[0], measured[-1]
        assert low.process_counts is not None and high.process_counts is not None
        work = [c.hpke + c.hashes for c in (low.process_counts, high.process_counts)]
        log_ratio = math.log2(high.members) / math.log2(low.members)
        ratio = work[1] / work[0]
        verdicts.append(
            {
                "target": f"{operation} processing: HPKE + hash ops grow as O(log n)",
                "measured": f"{work[0]} → {work[1]} ops from {low.members:,} to {high.members:,} members: ×{ratio:.2f}"
                f" (log2 ×{log_ratio:.2f}, linear ×{high.members / low.members:,.0f}); µs ×"
                f"{(high.process_s or 0) / (low.process_s or 1):.1f}",
                "met": ratio <= log_ratio * GROWTH_SLACK,
            }
        )
    return verdicts


def decrypt_verdict(results: Results) -> list[dict[str, Any]]:
    """The decrypt target against both ceilings.

    The bare AEAD + KDF ceiling leaves out the Ed25519 verification RFC 9420
    requires of every message; on this kind of machine that verification
    alone takes longer than half the bare ceiling's time per message, so the
    second row, against the crypto a conforming receiver must do, is the one
    an implementation can meet.
    """
    if not results.application:
        return []
    verdicts = []
    for label, field in (
        ("the AEAD + KDF ceiling", "ceiling_decrypt_per_s"),
        ("the AEAD + KDF + signature ceiling (the crypto RFC 9420 requires)", "signed_ceiling_decrypt_per_s"),
    ):
        shares = [(r.members, r.decrypt_per_s / float(getattr(r, field))) for r in results.application]
        worst = min(share for _, share in shares)
        ratios = ", ".join(f"{members:,}: {share:.1%}" for members, share in shares)
        verdicts.append(
            {
                "target": f"application decrypt ≥ {DECRYPT_TARGET:.0%} of {label}",
                "measured": f"by size {ratios}",
                "met": worst >= DECRYPT_TARGET,
            }
        )
    return verdicts


def ts_mls_verdicts(results: Results, members: int = 1000) -> list[dict[str, Any]]:
    verdicts = []
    for r in (r for r in results.operations if r.members == members and r.process_s is not None):
        ts = _ts_operation(results, members, r.operation)
        if ts is None or ts["process_s"] is None:
            continue
        verdicts.append(
            {
                "target": f"{r.operation} processing at {members:,} members no slower than ts-mls",
                "measured": f"engine {_ms(r.process_s)} ms, ts-mls {_ms(ts['process_s'])} ms",
                "met": r.process_s <= ts["process_s"],
            }
        )
    return verdicts


def targets_table(verdicts: Sequence[dict[str, Any]], note: str) -> None:
    rows = [(v["target"], v["measured"], "met" if v["met"] else "MISSED") for v in verdicts]
    report("Targets (issue 13 section 4)", rows, ("target", "measured", "verdict"))
    if note:
        console.print(f"[yellow]{note}[/]")


# --- the run ---------------------------------------------------------------------------------


def machine(versions: dict[str, str]) -> dict[str, Any]:
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        model = next(
            (line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if "model name" in line), ""
        )
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": model or platform.processor(),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        **versions,
    }


def write_json(
    path: Path, args: argparse.Namespace, results: Results, about: dict[str, Any], verdicts: list[dict[str, Any]]
) -> None:
    document = {
        "machine": about,
        "suite": {"id": results.suite.id, "name": results.suite.name},
        "arguments": {
            k: (list(v) if isinstance(v, tuple) else str(v) if isinstance(v, Path) else v)
            for k, v in vars(args).items()
        },
        "build_seconds": {str(members): steps for members, steps in results.builds.items()},
        "operations": [attrs.asdict(r) for r in results.operations],
        "application": [attrs.asdict(r) for r in results.application],
        "ts_mls": results.ts_mls,
        "ts_mls_note": results.ts_mls_note,
        "targets": verdicts,
    }
    path.write_text(json.dumps(document, indent=2) + "\n")


def suite_arguments(run: Run) -> argparse.Namespace:
    """The sizes a suite run measures: up to 1,000 members in the full run, 100 in a quick one, 10 when tiny."""
    sizes_: tuple[int, ...]
    runs: int | None
    if run.events >= 1_000_000:
        sizes_, messages, runs = (2, 10, 100, 1000), 1000, None
    elif run.events >= 10_000:
        sizes_, messages, runs = (2, 10, 100), 200, 3
    else:
        sizes_, messages, runs = (2, 10), 50, 1
    return argparse.Namespace(
        sizes=sizes_, commit_sizes=(), messages=messages, payload=100, runs=runs, suite=1, no_ts_mls=False, profile=0
    )


def figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: at the largest size measured, bob's processing of each commit kind and his
    decryption of application messages, beside ts-mls doing the same in the same run, and decryption beside
    the crypto a conforming receiver must do."""
    args = suite_arguments(run)
    results = Results(suite(args.suite))
    measure_engine(args, results)
    measure_ts_mls(args, results)
    members = max(args.sizes)
    group = f"{members:,}-member group"
    found = []
    peer_note = f"peer missing: {results.ts_mls_note}" if not results.ts_mls else ""
    for done in results.operations:
        if done.members != members or not done.process_s:
            continue
        ts = _ts_operation(results, members, done.operation)
        theirs = 1 / ts["process_s"] if ts and ts["process_s"] else None
        found.append(
            Figure(
                "mls",
                f"{done.operation} commit processed, {group}, against ts-mls",
                1 / done.process_s,
                "commits/s",
                theirs,
                "ts-mls" if theirs else "",
                "ratio" if theirs else None,
                1.0 if theirs else None,
                note=peer_note,
            )
        )
    for r in results.application:
        if r.members != members:
            continue
        ts_app = _ts_application(results, members) or {}
        found.append(
            Figure(
                "mls",
                f"application messages decrypted in order, {group}, against ts-mls",
                r.decrypt_per_s,
                "messages/s",
                ts_app.get("decrypt_per_s"),
                "ts-mls" if ts_app else "",
                "ratio" if ts_app else None,
                1.0 if ts_app else None,
                note=peer_note,
            )
        )
        found.append(
            Figure(
                "mls",
                f"application messages decrypted in order, {group}, against the AEAD + KDF + signature ceiling",
                r.decrypt_per_s,
                "messages/s",
                r.signed_ceiling_decrypt_per_s,
                "crypto alone",
                "ratio",
                DECRYPT_TARGET,
            )
        )
    return found


def main() -> None:
    args = arguments()
    results = Results(suite(args.suite))
    clock = "CPU time" if args.cpu_time else "wall time"
    if args.cpu_time:
        APPLICATION_CLOCK[0] = time.process_time
    console.print(f"[bold]MLS engine benchmark[/], suite {results.suite.id} ({results.suite.name}), {clock}")
    measure_engine(args, results)
    versions = measure_ts_mls(args, results)
    about = machine(versions)
    build_table(results)
    commit_table(results)
    growth_table(results)
    application_table(results)
    verdicts = growth_verdicts(results) + decrypt_verdict(results) + ts_mls_verdicts(results)
    targets_table(verdicts, results.ts_mls_note)
    console.print(f"[dim]{', '.join(f'{k} {v}' for k, v in about.items())}[/]")
    if args.json:
        write_json(args.json, args, results, about, verdicts)
        console.print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
