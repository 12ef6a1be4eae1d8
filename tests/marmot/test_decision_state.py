"""What the handlers decide from is the plugin's write-side state (the deletions, the processing record of
every outer event): a rebuild of the read models between two items (or their rows gone while the daemon
works) changes no decision, a rollback takes back what its invalidated epochs decided (our own messages too),
and a database made before is filled once from its rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.db import Database
from core.kv import KV
from core.state import ProtocolState
from jobs.rebuild.run import RebuildRequest, rebuild
from protocols.marmot import simulate
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.read.projectors import HISTORY, PROCESSED
from protocols.marmot.state import deletions, seen
from protocols.marmot.state.record_keys import CARRIED, EPOCHS, SEEN
from protocols.marmot.state.short_ids import short
from protocols.marmot.state.store import SealedValues
from tests.marmot._net import T0, Net, event_id
from tests.marmot._orders import assert_records_match_projection, outcome, run, split
from tests.marmot._read import message_state, outer_state
from tests.marmot.conftest import deliver, settle

#: Every Marmot read model a handler could be tempted to decide from.
READ_TABLES = (*PROCESSED.tables, *HISTORY.tables)


def _early_deletion(app, net, between) -> list[str | None]:
    """A deletion (and a forged one) that come before their target, ``between(app)`` run before the target."""
    line, rumor = net.send(1, "soon gone", T0 + 1)
    deletion, _ = net.delete(1, rumor["id"], T0 + 2)
    forged_line, forged = net.send(2, "only its author may delete it", T0 + 3)
    forgery, _ = net.delete(1, forged["id"], T0 + 4)
    deliver(app, deletion, forgery)
    between(app)
    deliver(app, line, forged_line)
    return [message_state(app, net.gid, rumor["id"]), message_state(app, net.gid, forged["id"])]


def test_a_rebuild_before_the_target_arrives_changes_no_decision(marmot_app, net, tmp_path: Path):
    def joined():
        app = marmot_app()
        app.runtime.run_command("marmot.join", net.join_params)
        return app

    def rebuilt(app):
        assert rebuild(RebuildRequest(app, engine="local", protocol="marmot", workdir=tmp_path / "work")).swapped

    def emptied(app):  # what a rebuild's drop leaves until its refill
        with app.db.write():
            app.db.execute("DELETE FROM marmot_deletions")

    plain = _early_deletion(joined(), net, lambda app: None)
    assert plain == ["Deleted", "Processed"]
    assert _early_deletion(joined(), net, rebuilt) == plain
    assert _early_deletion(joined(), net, emptied) == plain


def test_a_database_made_before_gets_its_deletions_once(marmot_app, net, settings):
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    line, rumor = net.send(1, "deleted before it came", T0 + 1)
    deletion, _ = net.delete(1, rumor["id"], T0 + 2)
    deliver(app, deletion)
    path = app.db.path
    app.close()
    db = Database(path, settings)  # as a database made before: its deletions only in the read model
    with db.write():
        db.execute("DELETE FROM protocol_state WHERE protocol = 'marmot' AND key >= 'deleted' AND key < 'deletee'")
        KV(db).delete(deletions.FILLED)
    db.close()
    reopened = marmot_app(path=path)
    with reopened.db.read():
        assert deletions.is_filled(reopened.runtime.kv)
        values = SealedValues(ProtocolState(reopened.db, PROTOCOL))
        assert deletions.earliest(values, net.gid, rumor["id"], net.cred(1)) is not None
    deliver(reopened, line)
    assert message_state(reopened, net.gid, rumor["id"]) == "Deleted"


# --- the processing record ------------------------------------------------------------------------------


def _empty_read_models(app) -> None:
    """What a rebuild's drop leaves until its refill, with the daemon stopped between two deliveries."""
    with app.db.write():
        for table in READ_TABLES:
            app.db.execute(f"DELETE FROM {table}")


def _outer_id(line: bytes) -> str | None:
    try:
        return event_id(line)
    except ValueError:  # the stream's garbage
        return None


def _log(app) -> list[tuple]:
    """Every decision, as the facts it recorded, in order."""
    return app.db.all("SELECT event_type, event_id, partition_key, payload FROM events ORDER BY seq")


@pytest.mark.usefixtures("wide_windows")
def test_read_models_emptied_between_deliveries_change_no_decision(tmp_path: Path, settings):
    """Dedupe, rollbacks (races), deletions and retries decide the same with every read model emptied after each
    batch: the same facts in the same order, and once rebuilt, the same read models."""
    sim = simulate.simulate(
        simulate.Config(members=4, messages=160, commits=6, races=2, garbage=4, duplicates=20, deletions=8, seed=9)
    )
    # The winners of the races come last, so their losers are applied first and rolled back.
    winners = {race["winner"] for race in sim.expected["races"]}
    late = [line for line in sim.lines if _outer_id(line) in winners]
    batches = [*split([line for line in sim.lines if line not in late], 6), late]
    plain = run(str(tmp_path / "plain.db"), settings, [sim], batches)
    emptied = run(str(tmp_path / "emptied.db"), settings, [sim], batches, after_batch=_empty_read_models)
    try:
        gid = sim.expected["group"]
        assert any(row[0] == "epoch_rolled_back" for row in _log(plain))
        assert _log(emptied) == _log(plain)
        assert rebuild(RebuildRequest(emptied, engine="local", protocol="marmot", workdir=tmp_path / "work")).swapped
        assert outcome(emptied, gid) == outcome(plain, gid)
        assert_records_match_projection(emptied, gid)
    finally:
        plain.close()
        emptied.close()


def _own_message_on_a_losing_branch(app, net: Net, between) -> tuple[str, str, int]:
    """Commit A is applied, we send a message after it, ``between(app)`` runs, then the better commit B rolls
    A back; the message's rumor id, its outer event's id and time."""
    app.runtime.run_command("marmot.join", net.join_params)
    a_line, _ = net.prepare(1, T0 + 20)
    b_line, _ = net.prepare(2, T0 + 10)
    deliver(app, a_line)
    sent = app.runtime.run_command("marmot.send", {"group": net.gid, "text": "said after A"}).events[0].data
    between(app)
    deliver(app, b_line)
    settle(app)
    return sent["rumor"]["id"], sent["outer_id"], sent["outer_created_at"]


@pytest.mark.parametrize("interference", ["none", "emptied"])
def test_our_own_message_after_a_losing_commit_is_invalidated(marmot_app, interference):
    net = Net(3)
    app = marmot_app()
    between = _empty_read_models if interference == "emptied" else lambda app: None
    rumor_id, outer_id, created_at = _own_message_on_a_losing_branch(app, net, between)
    with app.db.read():
        record = seen.get(ProtocolState(app.db, PROTOCOL), net.gid, created_at, outer_id)
    assert record is not None and record.state == "EpochInvalidated"
    if interference == "none":  # the read models (not emptied) say the same
        assert message_state(app, net.gid, rumor_id) == "EpochInvalidated"
        assert_records_match_projection(app, net.gid)


def _decision_state(app) -> dict[str, bytes | None]:
    """The records, their rumor index and the names a rollback finds events by."""
    state = ProtocolState(app.db, PROTOCOL)
    with app.db.read():
        names = [*state.keys(SEEN), *state.keys(CARRIED), *state.keys(EPOCHS)]
        return {name: state.get(name) for name in names}


def a_race_behind_our_message(marmot_app: Any) -> tuple[Net, Any, bytes, bytes, bytes, dict[str, Any], Any]:
    """A member who read A's commit (whose rival B, earlier, is prepared but not delivered), then a message of
    the epoch before it, and sent one of its own in A's epoch: every kind of record, and a rollback waiting.

    Returns the net, the app, A's and B's lines, the message's line, its rumor and our send's fact data."""
    net = Net(3)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    a_line, _ = net.prepare(1, T0 + 20)
    b_line, _ = net.prepare(2, T0 + 10)
    said, rumor = net.send(1, "before the upgrade", T0 + 1)
    deliver(app, said, a_line)
    sent = app.runtime.run_command("marmot.send", {"group": net.gid, "text": "ours, after A"}).events[0].data
    return net, app, a_line, b_line, said, rumor, sent


def test_a_database_made_before_gets_its_processing_records_once(marmot_app, settings):
    net, app, a_line, b_line, said, rumor, sent = a_race_behind_our_message(marmot_app)
    made = _decision_state(app)
    assert any(name.endswith(short(sent["outer_id"])) for name in made if name.startswith(EPOCHS))  # ours, in window
    path = app.db.path
    app.close()
    db = Database(path, settings)  # as a database made before: its records only in the read model
    with db.write():
        for prefix in (SEEN, CARRIED, EPOCHS):
            db.execute(
                "DELETE FROM protocol_state WHERE protocol = ? AND substr(key, 1, ?) = ?",
                (PROTOCOL, len(prefix), prefix),
            )
        KV(db).delete(seen.FILLED)
    db.close()
    reopened = marmot_app(path=path)
    with reopened.db.read():
        assert seen.is_filled(reopened.runtime.kv)
    filled = _decision_state(reopened)
    # The same records; the epoch index names (at least) the same events: every one of the window.
    assert {n: v for n, v in filled.items() if not n.startswith(EPOCHS)} == {
        n: v for n, v in made.items() if not n.startswith(EPOCHS)
    }
    assert {n for n in made if n.startswith(EPOCHS)} <= {n for n in filled if n.startswith(EPOCHS)}
    before = _log(reopened)
    deliver(reopened, said)  # known: a duplicate, no fact
    assert _log(reopened) == before
    deliver(reopened, b_line)  # B wins: A's epoch, and our message, are rolled back
    settle(reopened)
    assert outer_state(reopened, net.gid, a_line) == "Failed"
    assert message_state(reopened, net.gid, sent["rumor"]["id"]) == "EpochInvalidated"
    assert message_state(reopened, net.gid, rumor["id"]) == "Processed"
    assert event_id(said) != sent["outer_id"]
    assert_records_match_projection(reopened, net.gid)
