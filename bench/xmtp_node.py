"""Real libxmtp clients sending through the XMTP node of ``tessera serve``, beside the same clients through the
in-memory ceiling node, in the same run.

    python -m bench xmtp-node [--quick]
    python bench/xmtp_node.py [--clients N] [--messages M]

N clients (10 at the full run's size, 3 with ``--quick``), each libxmtp v1.10.0 in its own process
(tests/xmtp_node/libxmtp_peer.py), register inboxes and join one group; each sends one warm-up message (it
carries the new member's own commit), then all send M texts each at once, every client one after another.
Figures: messages/s over the sending (held to 70% of the ceiling's), p50 and p99 of one send, and the
node's CPU per message (the ``tessera serve`` process's user + system time over the sending, from /proc)
beside the clients' own (their processes' CPU over the same span).  The ceiling
(tests/xmtp_node/ceiling_node.py) keeps everything in memory and checks nothing; it runs in this process.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from suite import Figure, Run

TARGET_OF_CEILING = 0.7
CLIENTS, QUICK_CLIENTS = 10, 3
MESSAGES, QUICK_MESSAGES = 30, 5
_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (its threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


@attrs.frozen
class Sending:
    """What one target measured: sends done, wall seconds, each send's seconds, CPU of server and clients."""

    sent: int
    failed: int
    seconds: float
    latencies: list[float]
    server_cpu: float
    clients_cpu: float

    @property
    def rate(self) -> float:
        return self.sent / self.seconds

    def percentile_ms(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return 1000 * ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def through(url: str, clients: int, messages: int, server_cpu: Callable[[], float], folder: Path) -> Sending:
    """``clients`` real clients in one group on the node at ``url``, each sending ``messages`` texts at once."""
    from tests.xmtp_node.libxmtp_peer import LibxmtpError, client_factory, install

    make, close_all = client_factory(install(), folder)
    try:
        members = [make(f"client-{n}").create(url) for n in range(clients)]
        group = members[0].create_group(members[1:])
        for member in members[1:]:
            member.call("sync_welcomes")
            member.call("sync_group", group_id=group)
        for member in members:  # each new member's first send carries a commit of its own
            try:
                member.send_text(group, "warm-up")
            except LibxmtpError:  # a commit race lost three times: the message goes out on the next sync
                member.call("sync_group", group_id=group)

        def send_all(member: object) -> tuple[list[float], int]:
            latencies, failed = [], 0
            for number in range(messages):
                started = time.perf_counter()
                try:
                    member.send_text(group, f"message {number}")  # type: ignore[attr-defined]
                except LibxmtpError:
                    failed += 1
                    continue
                latencies.append(time.perf_counter() - started)
            return latencies, failed

        pids = [member._process.pid for member in members]
        server_before, clients_before = server_cpu(), sum(cpu_seconds(pid) for pid in pids)
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=clients) as pool:
            results = list(pool.map(send_all, members))
        seconds = time.perf_counter() - started
        server_used = server_cpu() - server_before
        clients_used = sum(cpu_seconds(pid) for pid in pids) - clients_before
        latencies = [latency for found, _ in results for latency in found]
        return Sending(
            len(latencies), sum(failed for _, failed in results), seconds, latencies, server_used, clients_used
        )
    finally:
        close_all()


def on_the_node(clients: int, messages: int, folder: Path) -> Sending:
    from tests.xmtp_node.node_process import new_node

    folder.mkdir(parents=True, exist_ok=True)
    with new_node(folder) as node:
        assert node.proc is not None
        pid = node.proc.pid
        return through(node.url, clients, messages, lambda: cpu_seconds(pid), folder / "clients")


def on_the_ceiling(clients: int, messages: int, folder: Path) -> Sending:
    from tests.xmtp_node.ceiling_node import CeilingNode

    with CeilingNode() as ceiling:  # in this process: its CPU is this process's (the harness adds a little)
        return through(ceiling.url, clients, messages, time.process_time, folder / "clients")


def figures_of(ours: Sending, ceiling: Sending, clients: int, messages: int) -> list[Figure]:
    what = f"{clients} libxmtp clients, {messages} texts each at once, one group"
    note = f"{ours.failed} sends failed on the node, {ceiling.failed} on the ceiling (commit races; resent on sync)"
    per_message_ms = 1000 * ours.server_cpu / max(ours.sent, 1)
    clients_ms = 1000 * ours.clients_cpu / max(ours.sent, 1)
    return [
        Figure(
            "xmtp-node",
            f"sending through tessera serve's XMTP node ({what})",
            ours.rate,
            "messages/s",
            ceiling.rate,
            "the in-memory ceiling node",
            "ratio",
            TARGET_OF_CEILING,
            note=note,
        ),
        Figure(
            "xmtp-node", f"one send, p50 ({what})", ours.percentile_ms(0.5), "ms", ceiling.percentile_ms(0.5), "ceiling"
        ),
        Figure(
            "xmtp-node",
            f"one send, p99 ({what})",
            ours.percentile_ms(0.99),
            "ms",
            ceiling.percentile_ms(0.99),
            "ceiling",
        ),
        Figure(
            "xmtp-node",
            f"the node's CPU per message ({what})",
            per_message_ms,
            "ms/message",
            clients_ms,
            "the clients' own CPU per message",
            "at_most",
            clients_ms,
            note=f"the ceiling's: {1000 * ceiling.server_cpu / max(ceiling.sent, 1):.2f} ms/message (with the harness)",
        ),
    ]


def measure(clients: int, messages: int, folder: Path) -> list[Figure]:
    ceiling = on_the_ceiling(clients, messages, folder / "ceiling")
    ours = on_the_node(clients, messages, folder / "node")
    return figures_of(ours, ceiling, clients, messages)


def figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: 10 clients and 30 texts each (3 and 5 with ``--quick``)."""
    from tests._peers import PeerUnavailable

    clients, messages = (QUICK_CLIENTS, QUICK_MESSAGES) if run.quick or run.events < 100_000 else (CLIENTS, MESSAGES)
    try:
        with tempfile.TemporaryDirectory() as folder:
            return measure(clients, messages, Path(folder))
    except PeerUnavailable as missing:
        return [
            Figure("xmtp-node", "sending through the XMTP node", 0.0, "messages/s", note=f"peer missing: {missing}")
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=CLIENTS, help=f"clients in the group (default {CLIENTS})")
    parser.add_argument("--messages", type=int, default=MESSAGES, help=f"texts each client sends (default {MESSAGES})")
    arguments = parser.parse_args()
    from suite import print_table

    with tempfile.TemporaryDirectory() as folder:
        found = measure(arguments.clients, arguments.messages, Path(folder))
    print_table(found, "real XMTP clients through the node and through the ceiling")


if __name__ == "__main__":
    main()
