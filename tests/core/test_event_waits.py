"""Blocking an item on another protocol's event: ``ctx.event`` and ``wait_for_event``.

A "receipts" protocol confirms ledger deposits; a receipt that arrives before
its deposit waits for the ledger's event, and the core wakes it in the
transaction that appends the deposit — the ledger knows nothing of receipts.
"""

from __future__ import annotations

from core.drain import run_until_idle, sweep_expired_blocked
from core.records import derive_event_id
from tests.fixtures import ledger, receipts
from tests.fixtures.receipts import receipt
from tests.helpers import push

DAY_MS = 86_400_000


def _confirmed(app) -> dict[str, int]:
    return dict(app.db.all("SELECT receipt, deposit_seq FROM receipts_confirmed"))


def _deposit_seq(app, entry: str) -> int:
    return app.db.one(
        "SELECT seq FROM events WHERE protocol = 'ledger' AND event_id = ?", (derive_event_id("entry", entry),)
    )[0]


def test_a_receipt_waits_for_the_deposit_of_another_protocol_and_is_woken_by_its_append(make_app):
    app = make_app([ledger, receipts], ["ledger", "receipts"])
    push(app, receipt("r1", "e1"), protocol="receipts")
    first = run_until_idle(app.runtime)
    assert first.outcomes == {"blocked": 1}
    assert app.db.one("SELECT reason_type, reason_key FROM blocked") == (
        "core.event",
        f"ledger:{derive_event_id('entry', 'e1').hex()}",
    )

    push(app, ledger.wire("deposit", "e1"))
    second = run_until_idle(app.runtime)
    assert second.outcomes == {"handled": 2} and second.rechecked == 1
    assert _confirmed(app) == {"r1": _deposit_seq(app, "e1")}
    assert app.db.one("SELECT count(*) FROM blocked")[0] == 0


def test_a_receipt_for_a_deposit_already_in_the_log_is_handled_at_once(make_app):
    app = make_app([ledger, receipts], ["ledger", "receipts"])
    push(app, ledger.wire("deposit", "e1"))
    run_until_idle(app.runtime)
    push(app, receipt("r1", "e1"), protocol="receipts")
    assert run_until_idle(app.runtime).outcomes == {"handled": 1}
    assert _confirmed(app) == {"r1": _deposit_seq(app, "e1")}


def test_another_event_wakes_nothing_and_no_marker_is_written(make_app):
    app = make_app([ledger, receipts], ["ledger", "receipts"])
    push(app, receipt("r1", "e1"), protocol="receipts")
    run_until_idle(app.runtime)
    push(app, ledger.wire("deposit", "e2"))
    assert run_until_idle(app.runtime).outcomes == {"handled": 1}
    assert app.db.one("SELECT count(*) FROM recheck_queue")[0] == 0
    assert app.db.one("SELECT count(*) FROM blocked")[0] == 1


def test_a_patient_wait_for_an_event_that_never_comes_is_parked_with_its_own_reason(make_app, clock):
    app = make_app([ledger, receipts], ["ledger", "receipts"])
    push(app, receipt("r1", "e9", horizon_ms=DAY_MS), protocol="receipts")
    run_until_idle(app.runtime)
    clock.now += DAY_MS + 1
    run_until_idle(app.runtime, advance_clock=True)
    assert sweep_expired_blocked(app.runtime) == 1
    assert app.db.one("SELECT reason FROM parked")[0].startswith("event_never_arrived: waited since")
