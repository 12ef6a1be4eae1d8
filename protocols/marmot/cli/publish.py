"""Publishing from the command line: run the tick now, and say what each relay answered.

A Marmot command only records what to send (outgoing intents); the tick
publishes it.  Commands that change something run the tick until nothing is
left to do, or until ``--timeout`` seconds have passed (a relay that is down
is retried with back-off by any later ``tessera tick``), so the user sees
each relay's answer at once.  When a tick daemon already holds this
database's lease, that daemon publishes and the command says so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
import click

from core import queues
from core.app import App
from core.errors import LeaseHeld
from core.records import ItemSource
from jobs.tick import DaemonMode, TickDaemon, TickReport
from protocols.marmot.cli.support import OptionDecorator
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.member import MarmotMember
from protocols.marmot.relays import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT_S, LiveOptions, PublishReport, RelayTransport

DEFAULT_WAIT_S = 30

timeout_option: OptionDecorator = click.option(
    "--timeout",
    "timeout_s",
    default=DEFAULT_WAIT_S,
    show_default=True,
    type=click.IntRange(0, 3600),
    help="Seconds to spend publishing now (0: only queue it for `tessera tick`).",
)


class RecordingRelays:
    """A relay transport that hands everything to ``inner`` and keeps each event's newest publish report."""

    def __init__(self, inner: RelayTransport):
        self.inner = inner
        self.reports: dict[str, tuple[int, PublishReport]] = {}

    def publish(
        self, event: dict[str, Any], relays: Sequence[str], *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> PublishReport:
        report = self.inner.publish(event, relays, timeout_s=timeout_s)
        self.reports[event["id"]] = (event["kind"], report)
        return report

    def fetch(
        self,
        filters: Any,
        relays: Sequence[str],
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> Any:
        return self.inner.fetch(filters, relays, timeout_s=timeout_s, page_size=page_size)

    def subscribe(
        self,
        filters: Any,
        relays: Sequence[str],
        on_event: Callable[[dict[str, Any]], None],
        *,
        stop: threading.Event,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        page_size: int = DEFAULT_PAGE_SIZE,
        options: LiveOptions | None = None,
    ) -> None:
        self.inner.subscribe(
            filters, relays, on_event, stop=stop, timeout_s=timeout_s, page_size=page_size, options=options
        )


@attrs.frozen
class PublishSummary:
    """What a run of the tick published, and what is still waiting.

    Attributes:
        published: per event sent to relays: its id, kind and each relay's answer.
        waiting: per outgoing event still queued: attempts so far and the last error.
        parked: outgoing events given up on during the run: parked id and reason.
        daemon_running: another tick daemon holds the lease and publishes instead.
    """

    published: tuple[dict[str, Any], ...] = ()
    waiting: tuple[dict[str, Any], ...] = ()
    parked: tuple[dict[str, Any], ...] = ()
    daemon_running: bool = False

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    def lines(self) -> list[str]:
        """What to tell the user, one line each."""
        said = [f"event {e['id']} (kind {e['kind']}): {_answers(e['relays'])}" for e in self.published]
        if self.daemon_running:
            said.append("queued: the tick daemon running on this database publishes it")
        elif self.waiting:
            last = self.waiting[-1]
            why = f" (attempt {last['attempts']}: {last['error']})" if last["attempts"] else ""
            said.append(f"{len(self.waiting)} event(s) still queued{why}; `tessera tick` keeps publishing them")
        said += [f"parked {p['id']}: {p['reason']}; `tessera parked retry {p['id']}` tries again" for p in self.parked]
        return said


def _answers(relays: Iterable[dict[str, str]]) -> str:
    return "; ".join(f"{r['relay']} {r['status']}" + (f" ({r['message']})" if r["message"] else "") for r in relays)


def publish_now(app: App, timeout_s: int) -> PublishSummary:
    """Run the tick until it is idle or ``timeout_s`` passed; what relays answered and what still waits."""
    started_ms = app.clock.now_ms()
    member = app.service(MarmotMember)
    recorder = RecordingRelays(member.relays())
    daemon_running = False
    if timeout_s > 0:
        with member.using(recorder):
            try:
                _run_tick(app, time.monotonic() + timeout_s)
            except LeaseHeld:
                daemon_running = True
    with app.db.read():
        waiting = queues.pending_outgoing(app.db, PROTOCOL)
        parked = queues.parked_since(app.db, PROTOCOL, ItemSource.OUTGOING, started_ms)
    return PublishSummary(
        published=tuple(_published(recorder.reports)),
        waiting=tuple({"attempts": tries.attempts, "error": tries.last_error} for tries in waiting),
        parked=tuple({"id": parked_id, "reason": reason} for parked_id, reason in parked),
        daemon_running=daemon_running,
    )


def _run_tick(app: App, deadline: float) -> TickReport:
    daemon = TickDaemon(app, mode=DaemonMode.UNTIL_IDLE)

    def stop_at_deadline(report: TickReport) -> None:
        if time.monotonic() >= deadline:
            daemon.stopping = True  # what's left is retried by the next tick, with its back-off

    daemon.on_pass = stop_at_deadline
    return daemon.run()


def _published(reports: dict[str, tuple[int, PublishReport]]) -> Iterable[dict[str, Any]]:
    for event_id, (kind, report) in reports.items():
        answers = [{"relay": o.relay, "status": o.status.value, "message": o.message} for o in report.outcomes]
        yield {"id": event_id, "kind": kind, "relays": answers}
