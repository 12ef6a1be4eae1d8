"""Publishing from the command line: run the tick now, and say what each relay answered.

A Marmot command only records what to send (outgoing intents); the tick
publishes it.  Commands that change something run the tick until nothing is
left to do, until ``--timeout`` seconds have passed, or until every event
still waiting has had its first try fail (a relay that is down: it is retried
with back-off by any later ``tessera tick``, for ``outgoing_retry_horizon_ms``),
so the user sees each relay's answer at once and a relay that is down costs
one try, not the whole timeout.  When a tick daemon already holds this
database's lease, that daemon publishes and the command says so.  What is
still waiting makes the command's outcome ``queued`` (jobs/outcome.py).
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
from jobs import hints, outcome
from jobs.outcome import Outcome
from jobs.tick import DaemonMode, TickDaemon, TickReport
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.member import MarmotMember
from protocols.marmot.relays import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT_S, LiveOptions, PublishReport, RelayTransport

DEFAULT_WAIT_S = 30

_timeout = click.option(
    "--timeout",
    "timeout_s",
    default=DEFAULT_WAIT_S,
    show_default=True,
    type=click.IntRange(0, 3600),
    help="Seconds to spend publishing now (0, the old spelling of --no-publish: only queue it).",
)
# The one "don't publish now" flag of every plugin (docs/cli.md): the same slot as --timeout, set to 0.
_no_publish = click.option(
    "--no-publish",
    "timeout_s",
    flag_value=0,
    help="Only record it; `tessera tick` (or `listen`) publishes it later (exit 5: queued).",
)


def timeout_option(command: Any) -> Any:
    """``--timeout SECONDS`` and ``--no-publish`` (the same as ``--timeout 0``): ``timeout_s`` in the command."""
    return _timeout(_no_publish(command))


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

    @property
    def outcome(self) -> Outcome:
        """FAILED when a relay refused an event for good (it was parked), QUEUED while anything waits (for a
        relay, or for the daemon), else DONE."""
        if self.parked:
            return Outcome.FAILED
        return Outcome.QUEUED if self.waiting or self.daemon_running else Outcome.DONE

    def reasons(self) -> list[str]:
        """Why the outcome is not DONE, one line each, for stderr."""
        said = [f"parked {p['id']}: {p['reason']}" for p in self.parked]
        if self.daemon_running and self.waiting:
            said.append(f"queued; the tick daemon running on this database publishes {_events(len(self.waiting))}")
        elif self.waiting:
            last = self.waiting[-1]
            why = f": {last['error']}" if last["error"] else " (not tried yet: --timeout 0)"
            said.append(f"queued; will retry {_events(len(self.waiting))} with `tessera tick`{why}")
        return said

    def lines(self) -> list[str]:
        """What to tell the user, one line each."""
        said = [f"event {e['id']} (kind {e['kind']}): {_answers(e['relays'])}" for e in self.published]
        said += [
            f"parked {p['id']}: {p['reason']}; `{hints.command('parked', 'retry', p['id'])}` tries again"
            for p in self.parked
        ]
        return said


def report(as_json: bool, value: dict[str, Any], lines: Sequence[str], summary: PublishSummary | None) -> None:
    """Print a publishing command's result (``value`` as JSON, or ``lines``), and exit by its outcome: 0 when
    everything went out, 5 (``queued``) when something still waits, 1 when a relay refused an event for good,
    with why on stderr."""
    result = Outcome.DONE if summary is None else summary.outcome
    outcome.emit(as_json, value, lines, result)
    outcome.finish(result, summary.reasons() if summary is not None else ())


def _events(count: int) -> str:
    return f"{count} event" + ("" if count == 1 else "s")


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
        # What's left is retried by the next tick, with its back-off: waiting for it here would block the
        # command for as long as a relay is down.
        if time.monotonic() >= deadline or _only_retries_left(app):
            daemon.stopping = True

    daemon.on_pass = stop_at_deadline
    return daemon.run()


def _only_retries_left(app: App) -> bool:
    """Nothing to process, and every pending outgoing event has had a try fail and waits for its next."""
    now = app.clock.now_ms()
    with app.db.read():
        if queues.has_incoming(app.db):
            return False
        retrying = queues.retrying_outgoing(app.db)
        due_at = queues.next_outgoing_due_at(app.db)
    return retrying.waiting > 0 and due_at is not None and due_at > now


def _published(reports: dict[str, tuple[int, PublishReport]]) -> Iterable[dict[str, Any]]:
    for event_id, (kind, report) in reports.items():
        answers = [{"relay": o.relay, "status": o.status.value, "message": o.message} for o in report.outcomes]
        yield {"id": event_id, "kind": kind, "relays": answers}
