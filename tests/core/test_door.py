"""The pipeline's door (core/door.py) and its prepare stage (core.protocol.PrepareStage), with the ledger.

Items handed to the door end exactly as the same blobs do through the tick; a failing item rolls back
alone; prepared results travel on the item to the decoder and the handler; a stage that fails, or a
result that does not fit, leaves the handler to do the work itself; two apps share nothing prepared.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import attrs
import pytest

from core import contract, drain, queues
from core.drain import run_until_idle
from core.protocol import PrepareStage, Protocol
from core.queues import WorkItem
from core.records import Envelope, Event, ItemSource, Result, derive_event_id
from tests.fixtures import ledger
from tests.fixtures.ledger import wire
from tests.helpers import ledger_balances, push


def _items(*blobs: bytes) -> list[WorkItem]:
    return [WorkItem("ledger", blob, ItemSource.BACKFILL, 0) for blob in blobs]


def _log(app) -> list[tuple[str, bytes, str]]:
    return app.db.all("SELECT event_type, event_id, payload FROM events ORDER BY seq")


def _queues(app) -> dict[str, list[tuple[Any, ...]]]:
    return {
        "blocked": app.db.all("SELECT reason_type, reason_key, blob FROM blocked ORDER BY id"),
        "parked": app.db.all("SELECT reason, blob FROM parked ORDER BY id"),
        "deferred": app.db.all("SELECT payload, attempts, last_error FROM deferred ORDER BY id"),
    }


MIXED = (
    wire("deposit", "d1", "a", 1),
    wire("needs", "n1", "b", 5),  # blocked until account b exists
    wire("deposit", "d1", "a", 1),  # the same entry again: a duplicate
    wire("permanent", "p1", "a"),
    wire("transient", "t1", "a"),
    b"\xffnot json",
    wire("deposit", "d2", "b", 2),  # opens account b: the blocked item is woken
)


def test_the_door_processes_items_as_the_tick_does(make_app):
    ticked, through_door = make_app([ledger], ["ledger"]), make_app([ledger], ["ledger"])
    push(ticked, *MIXED)
    tick_outcomes = []
    for _ in MIXED:
        outcome = drain.process_next_incoming(ticked.runtime)
        assert outcome is not None
        tick_outcomes.append((outcome.kind, outcome.reason))
    with through_door.runtime.door() as door:
        door_outcomes = [(o.kind, o.reason) for o in door.process_all(_items(*MIXED))]
    assert door_outcomes == tick_outcomes
    assert [kind for kind, _ in door_outcomes] == [
        "handled",
        "blocked",
        "duplicate",
        "parked",
        "retry",
        "parked",
        "handled",
    ]
    assert _queues(through_door) == _queues(ticked) and _log(through_door) == _log(ticked)
    # What the door left blocked or deferred is the tick's work from then on, as for the tick's own items.
    for app in (ticked, through_door):
        run_until_idle(app.runtime, advance_clock=True)
    assert ledger_balances(through_door) == ledger_balances(ticked) == {"a": 1, "b": 7}
    assert _queues(through_door) == _queues(ticked) and _log(through_door) == _log(ticked)


def _bad_intent(ctx: contract.Context, envelope: Envelope) -> Result:
    """Appends its event, then fails applying an intent the core does not know: the savepoint must undo it."""
    item = envelope.payload
    return Result(events=[ledger.deposited(item["id"], item["account"], 1)], intents=[object()])  # type: ignore[list-item]


def test_a_failing_item_rolls_back_alone_inside_the_doors_batch(make_app):
    base = ledger.register_protocol()
    app = make_app([ledger.variant(handlers={**base.handlers, "bad": _bad_intent})], ["ledger"])
    blobs = (wire("deposit", "d1"), wire("bad", "x1"), wire("deposit", "d2"))
    with app.runtime.door() as door:
        outcomes = door.process_all(_items(*blobs))
        assert app.db.in_write  # one micro-batch holds all three
    assert [o.kind for o in outcomes] == ["handled", "parked", "handled"]
    entries = [json.loads(payload)["entry"] for _, _, payload in _log(app)]
    assert entries == ["d1", "d2"]  # x1's event was appended, then rolled back with its savepoint
    assert app.db.all("SELECT blob FROM parked") == [(blobs[1],)]


def test_attempt_leaves_a_failure_to_its_caller_unless_it_says_dispose(app):
    item = _items(wire("permanent", "p1"))[0]
    with app.runtime.door() as door:
        assert door.attempt(item, lambda failure: False) is None
    assert _queues(app) == {"blocked": [], "parked": [], "deferred": []}
    with app.runtime.door() as door:
        outcome = door.attempt(item, lambda failure: "never work" in str(failure))
    assert outcome is not None and outcome.kind == "parked"


def test_an_item_inside_the_callers_transaction_commits_with_it(app):
    with app.db.write():
        app.runtime.kv.set("cursor", 1)
        outcome = app.runtime.door().process(_items(wire("deposit", "d1"))[0])
    assert outcome.kind == "handled" and app.runtime.kv.get("cursor") == 1 and ledger_balances(app) == {"a": 1}
    with pytest.raises(RuntimeError), app.db.write():
        app.runtime.kv.set("cursor", 2)
        app.runtime.door().process(_items(wire("deposit", "d2"))[0])
        raise RuntimeError("the caller fails after the item")
    assert app.runtime.kv.get("cursor") == 1 and ledger_balances(app) == {"a": 1}  # rolled back together


# --- the prepare stage ------------------------------------------------------------------------------


@attrs.frozen
class Squared:
    """What the stage worked out ahead: an entry's amount squared, and which database asked."""

    entry: str
    squared: int
    path: str


class Squaring:
    """A "ledger" whose ``square`` items deposit their amount squared: the stage squares ahead; the handler
    takes a result only for its own entry and database, and squares by itself otherwise."""

    def __init__(self, *, forge: bool = False, fail: bool = False, short: bool = False, least: int = 1):
        self.forge, self.fail, self.short, self.least = forge, fail, short, least
        self.prepared_batches: list[int] = []
        self.taken: list[str] = []
        self.squared_by_handler: list[str] = []
        self.decoded_with: list[object] = []

    def batch(self, runtime: contract.Runtime, items: Sequence[WorkItem]) -> list[Squared | None]:
        self.prepared_batches.append(len(items))
        if self.fail:
            raise RuntimeError("the worker pool is gone")
        found: list[Squared | None] = []
        for item in items:
            parsed = json.loads(item.blob)
            wrong = 1 if self.forge else 0
            found.append(Squared(parsed["id"], parsed["amount"] ** 2 + wrong, runtime.db.path))
        return found[:-1] if self.short else found

    def decode(self, blob: bytes, prepared: object) -> Envelope:
        self.decoded_with.append(prepared)
        return ledger.decode(blob)

    def handle(self, ctx: contract.Context, envelope: Envelope) -> Result:
        item = envelope.payload
        ahead = ctx.prepared
        if _fits(ahead, item["id"], ctx.db.path):
            squared = ahead.squared
            self.taken.append(item["id"])
        else:
            squared = item["amount"] ** 2
            self.squared_by_handler.append(item["id"])
        event = Event(
            "deposited",
            derive_event_id("entry", item["id"]),
            item["account"],
            0,
            {
                "account": item["account"],
                "amount": squared,
                "entry": item["id"],
            },
        )
        return Result(events=[event])

    def plugin(self) -> ledger.Variant:
        base = ledger.register_protocol()
        return ledger.Variant(
            Protocol(
                "ledger",
                "tests.fixtures.ledger",
                ledger.decode,
                handlers={**base.handlers, "square": self.handle},
                projectors=base.projectors,
                prepare=PrepareStage(batch=self.batch, decode=self.decode, least=self.least),
            )
        )


def _fits(ahead: object, entry: str, path: str) -> bool:
    """The handler's check before it takes a result: this entry's, this database's, and a square at all
    (cheaper than squaring, as checking a signature's id is cheaper than verifying it)."""
    if not isinstance(ahead, Squared) or ahead.entry != entry or ahead.path != path:
        return False
    return math.isqrt(ahead.squared) ** 2 == ahead.squared


SQUARES = tuple(wire("square", f"s{n}", "a", n) for n in range(1, 5))


def test_prepared_results_travel_with_the_items_to_the_decoder_and_the_handler(make_app):
    squaring = Squaring()
    app = make_app([squaring.plugin()], ["ledger"])
    with app.runtime.door() as door:
        outcomes = door.process_all(_items(*SQUARES))
    assert [o.kind for o in outcomes] == ["handled"] * 4
    assert squaring.prepared_batches == [4]  # one stage call for the batch, before any item
    assert squaring.taken == ["s1", "s2", "s3", "s4"] and squaring.squared_by_handler == []
    assert [p.entry for p in squaring.decoded_with if isinstance(p, Squared)] == ["s1", "s2", "s3", "s4"]
    assert ledger_balances(app) == {"a": 1 + 4 + 9 + 16}


def test_the_tick_runs_the_prepare_stage_on_its_incoming_batches(make_app):
    squaring = Squaring()
    app = make_app([squaring.plugin()], ["ledger"])
    push(app, *SQUARES)
    run_until_idle(app.runtime)
    assert squaring.prepared_batches == [4] and squaring.taken == ["s1", "s2", "s3", "s4"]
    assert ledger_balances(app) == {"a": 30}


def test_a_batch_smaller_than_the_stages_least_is_not_prepared(make_app, settings):
    squaring = Squaring(least=5)
    app = make_app([squaring.plugin()], ["ledger"])
    with app.runtime.door() as door:
        door.process_all(_items(*SQUARES))  # 4 items
    push(app, *(wire("square", f"t{n}", "b", n) for n in range(1, 7)))
    run_until_idle(app.runtime)  # a micro-batch of up to batch_items (256): 6 items, all prepared
    small = attrs.evolve(settings, batch_items=4)
    other = make_app([squaring.plugin()], ["ledger"], app_settings=small)
    push(other, *SQUARES)
    run_until_idle(other.runtime)  # micro-batches of 4: fewer than least, the rows are not even read ahead
    assert squaring.prepared_batches == [6]
    assert squaring.taken == [f"t{n}" for n in range(1, 7)]


def test_an_item_retried_from_deferred_is_handled_without_a_prepared_result(make_app):
    squaring = Squaring()
    app = make_app([squaring.plugin()], ["ledger"])
    with app.db.write():
        queues.enqueue_deferred(app.db, "ledger", SQUARES[2], app.clock.now_ms(), partition_key="a")
    run_until_idle(app.runtime)
    assert squaring.prepared_batches == [] and squaring.squared_by_handler == ["s3"]
    assert ledger_balances(app) == {"a": 9}


@pytest.mark.parametrize(
    "stage",
    [
        pytest.param({"forge": True}, id="a result the handler does not take is no answer"),
        pytest.param({"fail": True}, id="a stage that raises leaves the items unprepared"),
        pytest.param({"short": True}, id="a stage with too few results leaves the items unprepared"),
    ],
)
def test_without_a_fitting_result_the_handler_does_the_work_and_the_answer_is_the_same(make_app, stage, caplog):
    fitting, other = Squaring(), Squaring(**stage)
    apps = [make_app([s.plugin()], ["ledger"]) for s in (fitting, other)]
    for app in apps:
        with app.runtime.door() as door:
            door.process_all(_items(*SQUARES))
    assert ledger_balances(apps[0]) == ledger_balances(apps[1]) == {"a": 30}
    assert _log(apps[0]) == _log(apps[1])
    assert other.squared_by_handler == ["s1", "s2", "s3", "s4"] and other.taken == []
    if not stage.get("forge"):
        assert "handled without" in caplog.text


def test_two_apps_side_by_side_share_no_prepared_state(make_app):
    first, second = Squaring(), Squaring()
    apps = [make_app([s.plugin()], ["ledger"]) for s in (first, second)]
    doors = [app.runtime.door() for app in apps]
    prepared = [door.prepare(_items(*SQUARES)) for door in doors]
    # Interleaved: each item carries its own database's results, whichever door prepared last.
    for one, two in zip(prepared[0], prepared[1], strict=True):
        doors[0].process(one)
        doors[1].process(two)
    for door in doors:
        door.commit()
    assert first.taken == second.taken == ["s1", "s2", "s3", "s4"]
    # A result prepared for the other database is refused by the handler (its path is not ctx.db.path).
    with apps[0].runtime.door() as door:
        door.process(attrs.evolve(_items(wire("square", "s9", "b", 3))[0], prepared=Squared("s9", 10, apps[1].db.path)))
    assert first.squared_by_handler == ["s9"] and ledger_balances(apps[0])["b"] == 9
