"""``tessera marmot sync`` and ``listen``: relays into the queue, the tick over it, and what came in printed.

``sync`` is one round: fetch every active group's new events and our
invitations (:func:`protocols.marmot.transport.sync.sync`), then tick until idle.
A relay whose answer was cut short is named on stderr (and under ``failures``
in ``--json``); what it sent before that is processed all the same.  The exit
code follows the contract of network commands (jobs/outcome.py): 0 done, 3
when some relay failed but every group and the inbox got a complete answer
from another, 4 when one of them got a complete answer from no relay, 5 when
everything was read but something we publish still waits for its relays.
``listen`` runs until Ctrl-C (SIGINT) or SIGTERM: live subscriptions queue
events on a connection of their own while this process's tick daemon
processes them, and every message, commit and invitation is printed as it is
stored.  The subscriptions are rebuilt when what to follow changes (a group
joined, accepted in another terminal, or left).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import attrs
import click

from core import leases
from core.app import App, open_app
from core.errors import InvalidInput
from core.metrics import MetricsServer
from jobs import hints, outcome, output
from jobs.outcome import Outcome
from jobs.tick import DaemonMode, TickDaemon, TickReport
from protocols.marmot.cli.arrivals import Arrivals
from protocols.marmot.cli.publish import publish_now, timeout_option
from protocols.marmot.cli.support import json_option, relay_option, relay_urls
from protocols.marmot.errors import MarmotError
from protocols.marmot.transport import sync as relay_sync

# How often ``listen`` looks whether its subscriptions still match the groups it is in.
RECHECK_S = 2.0
# How long stopping waits for the subscription threads (each notices its stop flag within 50 ms).
STOP_WAIT_S = 10.0


@click.command()
@relay_option("Also ask this relay (repeatable).")
@timeout_option
@json_option
@click.pass_obj
def sync(obj: Any, relays: tuple[str, ...], timeout_s: int, as_json: bool) -> None:
    """Fetch new group events and invitations from relays, process them, and print what came in."""
    extra = relay_urls(relays)
    app = obj.app()
    arrivals = Arrivals(app.runtime)
    try:
        report = relay_sync.sync(app, extra)
        summary = publish_now(app, timeout_s)
    finally:
        arrivals.stop()
    fetched = [f"{what}: {output.plural(count, 'event')} fetched" for what, count in report.per_subscription.items()]
    lines = [
        *(fetched or ["nothing to fetch: no active group, and no KeyPackage relays or --relay for invitations"]),
        *arrivals.lines,
        *summary.lines(),
    ]
    completeness = report.completeness
    shown = {
        "fetched": report.per_subscription,
        "complete": completeness.label,
        "failures": [attrs.asdict(failure) for failure in report.failures],
        "incomplete": report.incomplete,
        "arrived": arrivals.items,
        "publish": summary.to_json(),
    }
    result = outcome.worst((_FETCHED[completeness], summary.outcome))
    outcome.emit(as_json, shown, lines, result)
    reasons = [f"warning: relay answer cut short: {failure}" for failure in report.failures]
    if report.incomplete:
        reasons.append(
            f"warning: no relay answered completely for {', '.join(report.incomplete)}: some events may be "
            "missing; sync again later"
        )
    outcome.finish(result, [*reasons, *summary.reasons()])


# What the completeness of the relays' answers means in the exit-code contract.
_FETCHED = {
    relay_sync.Completeness.COMPLETE: Outcome.DONE,
    relay_sync.Completeness.PARTIAL: Outcome.PARTIAL,
    relay_sync.Completeness.INCOMPLETE: Outcome.UNREACHABLE,
}


class NothingToFollow(MarmotError, InvalidInput):
    """``listen`` was started where there is no group and no relay to follow."""


class RelayFeed:
    """Live subscriptions on their own connection, rebuilt when what to follow changes."""

    def __init__(self, tick_app: App, feed_app: App, extra_relays: Sequence[str], *, notes_to_stderr: bool = False):
        self.tick_app = tick_app
        self._notes_to_stderr = notes_to_stderr  # `listen --json`: stdout has only the arrivals' JSON lines
        self.feed = feed_app  # used by the listen thread alone
        self.extra = tuple(extra_relays)
        self.following: tuple[tuple[str, tuple[str, ...], str], ...] = ()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._checked_at = 0.0

    def _plan(self) -> tuple[tuple[str, tuple[str, ...], str], ...]:
        """What to follow: each subscription's name, relays and filter (its moving ``since`` left out)."""
        found = relay_sync.subscriptions(self.tick_app.db, self.extra)
        return tuple(
            (s.what, s.relays, json.dumps({k: v for k, v in s.filter.items() if k != "since"}, sort_keys=True))
            for s in found
        )

    def start(self) -> None:
        """Subscribe to what the database follows now."""
        self.following = self._plan()
        self._checked_at = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=relay_sync.listen, args=(self.feed, self._stop, self.extra), name="marmot-listen", daemon=True
        )
        self._thread.start()

    def refresh(self, report: TickReport | None = None) -> None:
        """Resubscribe when what to follow changed since :meth:`start` (called after each tick pass)."""
        if time.monotonic() - self._checked_at < RECHECK_S:
            return
        self._checked_at = time.monotonic()
        if self._plan() == self.following:
            return
        self.stop()
        self.start()
        click.echo(f"now following: {self.describe()}", err=self._notes_to_stderr)

    def stop(self) -> None:
        """End every subscription and wait for their threads."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT_S)
            self._thread = None

    def describe(self) -> str:
        return "; ".join(f"{what} on {', '.join(relays)}" for what, relays, _ in self.following) or "nothing yet"


@click.command()
@relay_option("Also listen on this relay (repeatable).")
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65_535),
    help="Serve GET /metrics (queues, drops by reason, counters) on 127.0.0.1:PORT while it listens.",
)
@json_option
@click.pass_obj
def listen(obj: Any, relays: tuple[str, ...], metrics_port: int | None, as_json: bool) -> None:
    """Follow relays live, process what arrives and print it, until Ctrl-C (--json: a JSON line per arrival,
    the notes on stderr)."""
    extra = relay_urls(relays)
    app = obj.app()
    feed_app = open_app(obj.settings, obj.pm)  # the subscriptions queue on a connection of their own
    if as_json:
        arrivals = Arrivals(app.runtime, on_item=lambda item: click.echo(output.to_json_line(item)))
    else:
        arrivals = Arrivals(app.runtime, on_line=click.echo)
    feed = RelayFeed(app, feed_app, extra, notes_to_stderr=as_json)
    try:
        feed.start()
        if not feed.following:
            raise NothingToFollow(
                "nothing to listen to: this database is in no active group and has no KeyPackage relays for "
                "invitations; give --relay URL, or publish KeyPackages, create a group or accept an invitation first"
            )
        daemon = TickDaemon(app, mode=DaemonMode.FOREVER)
        daemon.on_pass = feed.refresh
        daemon.install_signal_handlers()
        click.echo(f"listening: {feed.describe()} (Ctrl-C stops)", err=as_json)
        with app.db.read():
            holder = leases.current(app.db, "tick")
        if holder is not None and holder["expires_at_ms"] > app.clock.now_ms():
            click.echo(
                f"note: tick daemon {holder['owner']} holds this database's lease and processes what arrives; "
                f"what it processes is not printed here (`{hints.command('marmot', 'history')}` shows it)",
                err=as_json,
            )
        with MetricsServer(obj.settings, metrics_port):
            daemon.run()
    finally:
        feed.stop()
        arrivals.stop()
        feed_app.close()
    click.echo("stopped", err=as_json)
