"""The deletions the handlers decide from are the plugin's write-side state: a rebuild of the read models
between two items (or their rows gone while the daemon works) changes no decision, a rollback takes the
deletions of its invalidated epochs back, and a database made before is filled once from its rows."""

from __future__ import annotations

from pathlib import Path

from core.db import Database
from core.kv import KV
from core.state import ProtocolState
from jobs.rebuild.run import RebuildRequest, rebuild
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.state import deletions
from protocols.marmot.state.store import SealedValues
from tests.marmot._net import T0
from tests.marmot._read import message_state
from tests.marmot.conftest import deliver


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
