"""The command runner: one transaction per command, intents, subscriptions, isolation."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from core import blobs, eventlog
from core.errors import InvalidInput, PluginError, UnknownCommand, UnknownIntent
from core.intents import WriteProtocolState
from core.protocol import ProjectionConnection
from core.records import Event, Result, StoredEvent, derive_event_id
from core.state import ProtocolState
from projectors import Projector
from tests.fixtures import ledger
from tests.helpers import MakeApp, ledger_balances


def test_command_appends_projects_and_commits(app):
    projections = app.db.all("SELECT * FROM projections ORDER BY name")
    outcome = app.runtime.run_command("ledger.deposit", {"id": "d1", "account": "alice", "amount": 10})
    assert [e.type for e in outcome.events] == ["deposited"]
    assert ledger_balances(app) == {"alice": 10}
    # Projected in the command's transaction: nothing records how far the projection got.
    assert app.db.all("SELECT * FROM projections ORDER BY name") == projections


def test_duplicate_command_changes_nothing(app):
    for _ in range(2):
        app.runtime.run_command("ledger.deposit", {"id": "d1", "account": "alice", "amount": 10})
    assert ledger_balances(app) == {"alice": 10}
    assert eventlog.count(app.db) == 1


def test_two_partitions_commit_together(app):
    app.runtime.run_command("ledger.deposit", {"id": "d1", "account": "alice", "amount": 10})
    app.runtime.run_command("ledger.transfer", {"id": "t1", "from": "alice", "to": "bob", "amount": 4})
    assert ledger_balances(app) == {"alice": 6, "bob": 4}


@pytest.mark.parametrize(
    "params, error",
    [
        ({"id": "t1", "from": "alice", "to": "bob", "amount": 99}, InvalidInput),
        ({"id": "t1", "from": "alice", "to": "bob", "amount": 1, "explode": True}, RuntimeError),
    ],
)
def test_a_raising_command_rolls_back_everything(app, params, error):
    app.runtime.run_command("ledger.deposit", {"id": "d1", "account": "alice", "amount": 10})
    before = app.db.all("SELECT * FROM events"), ledger_balances(app)
    with pytest.raises(error):
        app.runtime.run_command("ledger.transfer", params)
    assert (app.db.all("SELECT * FROM events"), ledger_balances(app)) == before


def test_unknown_command(app):
    with pytest.raises(UnknownCommand, match="ledger.deposit"):
        app.runtime.run_command("ledger.nope")


def test_unknown_intent_is_refused_and_rolls_back(app):
    with pytest.raises(UnknownIntent, match="allowed: EnqueueOutgoing"):
        app.runtime.run_command("ledger.bad_intent")


def test_commands_must_return_a_result(app):
    with pytest.raises(PluginError, match="returned dict"):
        app.runtime.run_command("ledger.not_result")


def test_every_intent_kind_is_applied_in_the_same_transaction(app):
    data = b"hello blob"
    file_id = hashlib.sha256(data).hexdigest()
    app.runtime.run_command("ledger.effects", {"id": "x", "file_id": file_id, "data": data})
    assert ProtocolState(app.db, "ledger").get("state:x") == b"Sx"
    assert app.db.one("SELECT partition_key, idempotency_key FROM deferred") == ("fx", "later:x")
    assert app.db.one("SELECT transport, payload FROM outgoing") == ("loopback", b"out:x")
    info = blobs.info(app.db, file_id)
    assert info is not None and info.status == "complete"
    # The recheck marker is only created when something is blocked on that reason.
    assert app.db.value("SELECT count(*) FROM recheck_queue") == 0


def test_intent_idempotency_keys(app):
    app.runtime.run_command("ledger.effects", {"id": "x"})
    app.runtime.run_command("ledger.effects", {"id": "x"})
    assert app.db.value("SELECT count(*) FROM deferred") == 1
    assert app.db.value("SELECT count(*) FROM outgoing") == 1


def test_intent_failure_rolls_back_the_command(app):
    with pytest.raises(InvalidInput, match="file_id"):
        app.runtime.run_command("ledger.effects", {"id": "x", "file_id": "not-a-hash", "data": b"d"})
    assert eventlog.count(app.db) == 0
    assert ProtocolState(app.db, "ledger").get("state:x") is None


def test_self_managed_command_gets_no_outer_transaction(app):
    entries = [{"id": f"e{i}", "account": "acc", "amount": 1} for i in range(5)]
    entries.insert(2, {"id": "bad", "account": "acc", "amount": 1.5})  # not canonical JSON: skipped
    outcome = app.runtime.run_command("ledger.import", {"entries": entries})
    assert outcome.result == 5
    assert ledger_balances(app) == {"acc": 5}


def test_subscribers_hear_only_committed_events(app):
    heard: list[StoredEvent] = []
    unsubscribe = app.runtime.subscribe("deposited", heard.append, protocol="ledger")
    app.runtime.run_command("ledger.deposit", {"id": "d1", "account": "alice", "amount": 3})
    with pytest.raises(InvalidInput):
        app.runtime.run_command("ledger.transfer", {"id": "t", "from": "alice", "to": "b", "amount": 9})
    with pytest.raises(RuntimeError):
        app.runtime.run_command(
            "ledger.transfer", {"id": "t", "from": "alice", "to": "b", "amount": 1, "explode": True}
        )
    app.runtime.run_command("ledger.deposit", {"id": "d1", "account": "alice", "amount": 3})  # duplicate
    assert [e.data["entry"] for e in heard] == ["d1"]
    unsubscribe()
    app.runtime.run_command("ledger.deposit", {"id": "d2", "account": "alice", "amount": 3})
    assert len(heard) == 1


def test_subscriber_runs_after_commit_is_visible_elsewhere(app, settings):
    from core.db import Database

    other = Database(app.db.path, settings)
    seen = []
    app.runtime.subscribe("deposited", lambda e: seen.append(other.value("SELECT count(*) FROM events")))
    app.runtime.run_command("ledger.deposit", {"id": "d1", "account": "alice", "amount": 3})
    assert seen == [1]
    other.close()


def test_upcasters_upgrade_old_payloads(make_app: MakeApp) -> None:
    seen: list[StoredEvent] = []
    projector = Projector("up.p", "ledger", ("ledger_entries",), {"legacy": lambda conn, e: seen.append(e)})
    plugin = ledger.variant(
        projectors=(projector,),
        upcasters={
            ("legacy", 1): lambda d: {"amount_cents": d["amount"] * 100},
            ("legacy", 2): lambda d: {**d, "currency": "EUR"},
        },
    )
    app = make_app([plugin], ["ledger"])
    with app.db.write():
        app.runtime.apply("ledger", Result(events=[Event("legacy", b"1", "p", 0, {"amount": 2}, version=1)]), 0)
        app.runtime.apply("ledger", Result(events=[Event("legacy", b"2", "p", 0, {"amount_cents": 5}, version=2)]), 0)
    assert [(e.version, e.data) for e in seen] == [
        (3, {"amount_cents": 200, "currency": "EUR"}),
        (3, {"amount_cents": 5, "currency": "EUR"}),
    ]


def _failing_history_plugin(isolate: bool) -> ledger.Variant:
    from core.protocol import Command

    def explode(conn: ProjectionConnection, event: StoredEvent) -> None:
        conn.execute("INSERT INTO ledger_entries(entry_id, account, amount, seq) VALUES (x'01', 'x', 1, 1)")
        raise RuntimeError("history store is full")

    history = Projector(
        "ledger.history", "ledger", ("ledger_entries",), {"deposited": explode}, isolate_failures=isolate
    )

    def advance(ctx: object, params: dict[str, object]) -> Result:
        return Result(events=[ledger.deposited("e1", "a", 1)], intents=[WriteProtocolState("group", b"epoch-2")])

    return ledger.variant(projectors=(history,), commands={"advance": Command(advance)})


def test_isolated_history_failure_still_commits_state(make_app):
    """Invariant 7: state that decides decryptability is written even when history fails."""
    failures = []

    class Observer:
        from core import hookimpl

        @hookimpl
        def on_projection_failed(self, projection, seq, error):
            failures.append((projection, seq, error))

    app = make_app([_failing_history_plugin(isolate=True), Observer()], ["ledger"])
    app.runtime.run_command("ledger.advance")
    assert ProtocolState(app.db, "ledger").get("group") == b"epoch-2"
    assert eventlog.count(app.db) == 1
    assert app.db.value("SELECT count(*) FROM ledger_entries") == 0  # the failed projector's write is undone
    assert app.db.one("SELECT projection, seq FROM projection_failures") == ("ledger.history", 1)
    assert app.db.value("SELECT failures FROM projections WHERE name = 'ledger.history'") == 1
    assert failures == [("ledger.history", 1, "RuntimeError: history store is full")]


def test_unisolated_projector_failure_rolls_back(make_app):
    app = make_app([_failing_history_plugin(isolate=False)], ["ledger"])
    with pytest.raises(RuntimeError):
        app.runtime.run_command("ledger.advance")
    assert ProtocolState(app.db, "ledger").get("group") is None
    assert eventlog.count(app.db) == 0


def test_projection_registered_late_needs_rebuild(make_app: MakeApp, tmp_path: Path) -> None:
    path = str(tmp_path / "late.db")
    app = make_app([ledger], ["ledger"], path=path)
    app.runtime.run_command("ledger.deposit", {"id": "d1", "account": "a", "amount": 1})
    app.close()
    extra = Projector("ledger.extra", "ledger", ("ledger_entries",), {"deposited": lambda c, e: None})
    again = make_app([ledger.variant(projectors=(ledger.BALANCES, extra))], ["ledger"], path=path)
    status: dict[str, str] = dict(again.db.all("SELECT name, status FROM projections"))
    assert status == {"ledger.balances": "live", "ledger.extra": "needs_rebuild"}


def test_event_ids_are_derived_deterministically():
    assert ledger.deposited("x", "a", 1).event_id == derive_event_id("entry", "x")


def test_blocked_items_can_schedule_their_own_recheck_and_see_attempts(app):
    from core import drain, queues

    with app.db.write():
        queues.push_incoming(app.db, "ledger", [ledger.wire("patient", "p1", "ghost", 1, give_up_after=2)], 0)
    drain.run_until_idle(app.runtime)
    assert app.db.one("SELECT reason_key, attempts FROM blocked") == ("ghost", 0)
    assert app.db.value("SELECT available_at_ms FROM recheck_queue") == app.clock.now_ms() + 100
    before = app.clock.now_ms()
    summary = drain.run_until_idle(app.runtime, advance_clock=True)  # timer rechecks, no unblocking event
    assert summary.rechecked == 2
    assert app.clock.now_ms() - before == 200, "each recheck waited the 100 ms the item asked for"
    # tries before the last: the first handling and one recheck
    assert app.db.value("SELECT json_extract(payload, '$.attempts') FROM events WHERE event_type = 'gave_up'") == 2
    assert app.db.value("SELECT count(*) FROM blocked") == 0
