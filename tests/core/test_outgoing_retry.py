"""Outgoing messages whose transport fails transiently are retried until the horizon, then parked.

The clock is the core's ManualClock: hours of retries pass in no real time."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import publish, queues
from core.errors import InvalidSetting, PermanentError, TransientError
from core.outgoing_retry import next_attempt_ms
from core.queues import OutgoingItem
from core.runtime import Runtime
from core.settings import Settings
from core.status import snapshot
from tests.fixtures import ledger

HOUR_MS = 3_600_000


class DownRelay:
    """A transport whose peer is unreachable (or refuses for good, with ``refusal``), counting the tries."""

    name = "down"

    def __init__(self, refusal: bool = False) -> None:
        self.refusal = refusal
        self.tries = 0

    def send(self, runtime: Runtime, item: OutgoingItem) -> None:
        self.tries += 1
        if self.refusal:
            raise PermanentError("blocked: the relay refuses this kind")
        raise TransientError("connection refused")


def _queue_one(app, transport) -> None:
    app.registry.transports[transport.name] = transport
    with app.db.write():
        queues.enqueue_outgoing(app.db, "ledger", transport.name, "", ledger.wire("deposit", "d1"), app.clock.now_ms())


def _pending(app) -> tuple[int, int, int] | None:
    with app.db.read():
        rows = app.db.all("SELECT attempts, available_at_ms, created_at_ms FROM outgoing WHERE status = 'pending'")
    return rows[0] if rows else None


def _parked(app) -> int:
    with app.db.read():
        return app.db.count("SELECT count(*) FROM parked")


def _retry_until_parked_or(app, clock, until_ms: int) -> None:
    """Publish whatever is due, moving the clock to each next try, until parked or past ``until_ms``."""
    while (row := _pending(app)) is not None and row[1] <= until_ms:
        clock.now = max(clock.now, row[1])
        publish.publish_due(app.runtime)


def test_a_transient_outage_is_retried_past_15_seconds_and_parked_only_at_the_horizon(make_app, clock, settings):
    horizon = 2 * HOUR_MS
    # The defaults' backoff (1 s doubling, 5 min cap), as a real daemon retries.
    settings = attrs.evolve(
        settings, retry_base_ms=1_000, retry_max_ms=300_000, max_attempts=5, outgoing_retry_horizon_ms=horizon
    )
    app = make_app([ledger], ["ledger"], app_settings=settings)
    relay = DownRelay()
    _queue_one(app, relay)
    queued_at = clock.now_ms()

    _retry_until_parked_or(app, clock, queued_at + 60_000)
    assert _parked(app) == 0  # once, 5 tries (~15 s) parked it
    row = _pending(app)
    assert row is not None and row[0] > settings.max_attempts

    _retry_until_parked_or(app, clock, queued_at + horizon - 1)
    assert _pending(app) is not None and _parked(app) == 0
    _retry_until_parked_or(app, clock, queued_at + horizon + settings.retry_max_ms)
    assert _pending(app) is None and _parked(app) == 1
    assert clock.now_ms() == queued_at + horizon  # the last try falls on the horizon, not a backoff later
    with app.db.read():
        reason, source = app.db.all("SELECT reason, source FROM parked")[0]
    assert source == "outgoing" and "TransientError: connection refused" in reason
    # Backoff capped at retry_max_ms: two hours are tried about 2 h / 5 min times, not once a second.
    assert horizon // settings.retry_max_ms <= relay.tries <= 3 * horizon // settings.retry_max_ms


def test_a_permanent_refusal_is_parked_at_once(make_app):
    app = make_app([ledger], ["ledger"])
    _queue_one(app, DownRelay(refusal=True))
    publish.publish_due(app.runtime)
    assert _pending(app) is None and _parked(app) == 1


def test_status_shows_what_waits_to_retry(make_app, clock):
    app = make_app([ledger], ["ledger"])
    _queue_one(app, DownRelay())
    assert snapshot(app.db)["outgoing_retrying"]["waiting"] == 0  # not tried yet: nothing to retry
    publish.publish_due(app.runtime)
    retrying = snapshot(app.db)["outgoing_retrying"]
    assert retrying["waiting"] == 1
    assert retrying["next_attempt_at_ms"] > clock.now_ms()
    assert retrying["horizon_ms"] == app.db.settings.outgoing_retry_horizon_ms
    assert retrying["oldest_age_ms"] >= 0


@given(
    attempts=st.integers(1, 10_000),
    base=st.integers(1, 60_000),
    cap=st.integers(1, 3_600_000),
    horizon=st.integers(1_000, 48 * HOUR_MS),
    elapsed=st.integers(0, 48 * HOUR_MS),
)
def test_the_next_try_is_jittered_capped_and_never_past_the_horizon(attempts, base, cap, horizon, elapsed):
    settings = Settings(retry_base_ms=base, retry_max_ms=cap, outgoing_retry_horizon_ms=horizon)
    queued, now = 1_000, 1_000 + elapsed
    at = next_attempt_ms(settings, attempts, queued, now)
    delay = settings.retry_delay_ms(attempts)
    assert now < at <= now + max(delay, 1)
    assert at >= min(now + delay // 2, queued + horizon)
    assert delay <= cap
    if now < queued + horizon:
        assert at <= queued + horizon


def test_the_horizon_is_range_checked_wherever_it_comes_from():
    assert Settings.load(env={}).outgoing_retry_horizon_ms == 24 * HOUR_MS
    assert Settings.load(env={"TESSERA_OUTGOING_RETRY_HORIZON_MS": "3600000"}).outgoing_retry_horizon_ms == HOUR_MS
    for bad in ("999", str(366 * 24 * HOUR_MS), "soon"):
        with pytest.raises(InvalidSetting, match="TESSERA_OUTGOING_RETRY_HORIZON_MS"):
            Settings.load(env={"TESSERA_OUTGOING_RETRY_HORIZON_MS": bad})
