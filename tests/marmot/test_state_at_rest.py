"""Group state encrypted at rest: its key derived from the database's key file, the deprecated variables,
wrong keys, rotation, and no plaintext on disk."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from core import drain, encryption, keys, queues
from core.db import Database
from core.errors import DatabaseEncrypted
from core.protocol import TickContext
from core.state import ProtocolState
from jobs.tick import TickDaemon
from protocols import marmot
from protocols.libraries import mls
from protocols.marmot import jobs
from protocols.marmot.errors import (
    StateKeyError,
    StateKeyInvalid,
    StateKeyMissing,
    StateKeyWrong,
)
from protocols.marmot.state import key
from protocols.marmot.state.numbers import NEXT, NUMBER
from protocols.marmot.state.record_keys import CARRIED, EPOCHS, SEEN
from protocols.marmot.state.store import GroupStateStore, SealedValues, load, open_sealed
from tests.helpers import open_test_app
from tests.marmot._net import T0
from tests.marmot._read import history_ids
from tests.marmot.conftest import KEY_HEX, deliver


def test_missing_key_says_exactly_what_to_set(marmot_app, net, settings):
    app = marmot_app(app_settings=attrs.evolve(settings, key_file=""))  # a database with no key file at all
    with pytest.raises(StateKeyMissing) as caught:
        app.runtime.run_command("marmot.join", net.join_params)
    assert "--key-file" in str(caught.value) and "tessera key new" in str(caught.value)
    assert app.db.value("SELECT count(*) FROM protocol_state") == 0


def test_state_sealed_under_the_deprecated_variable_keeps_opening_after_it_is_gone(
    marmot_app, net, monkeypatch, caplog
):
    """The path of a database from before the one secret: its state opens with the old variable (warned about);
    given a key file, the database keeps the old key sealed under it at its next write, and from then on its
    state opens without the variable."""
    monkeypatch.setenv("TESSERA_MARMOT_STATE_KEY", KEY_HEX)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    deliver(app, net.send(1, "sealed under the old variable", T0 + 1)[0])
    assert "TESSERA_MARMOT_STATE_KEY is deprecated" in caplog.text
    with app.db.read():
        assert SealedValues(ProtocolState(app.db, "marmot")).key == bytes.fromhex(KEY_HEX)
    monkeypatch.delenv("TESSERA_MARMOT_STATE_KEY")
    with app.db.read():
        assert SealedValues(ProtocolState(app.db, "marmot")).key == bytes.fromhex(KEY_HEX)  # kept by the database
        assert load(ProtocolState(app.db, "marmot"), net.gid) is not None
    deliver(app, net.send(2, "after the variable is gone", T0 + 2)[0])
    assert len(history_ids(app, net.gid)) == 2


def test_a_deprecated_key_met_only_by_reads_is_not_kept_yet(marmot_app, net, monkeypatch):
    """A database with state sealed under the old variable, only read since: without the variable, the wrong-key
    error names the variable it still needs."""
    monkeypatch.setenv("TESSERA_MARMOT_STATE_KEY", KEY_HEX)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    with app.db.write():  # what a database from before the one secret has: state, and no key kept
        app.db.execute("DELETE FROM kv WHERE key LIKE 'keys.adopted_state_key.%'")
    monkeypatch.delenv("TESSERA_MARMOT_STATE_KEY")
    with pytest.raises(StateKeyWrong, match="deprecated TESSERA_MARMOT_STATE_KEY"):
        load(ProtocolState(app.db, "marmot"), net.gid)


@pytest.mark.parametrize("value", ["abc", "zz" * 32, "11" * 31])
def test_malformed_key_is_refused(marmot_app, net, monkeypatch, value):
    monkeypatch.setenv("TESSERA_MARMOT_STATE_KEY", value)
    with pytest.raises(StateKeyInvalid, match="64 hex"):
        marmot_app().runtime.run_command("marmot.join", net.join_params)


def test_key_file_works_and_a_missing_file_is_named(marmot_app, net, monkeypatch, tmp_path: Path):
    monkeypatch.setenv("TESSERA_MARMOT_STATE_KEY_FILE", str(tmp_path / "absent.key"))
    app = marmot_app()
    with pytest.raises(StateKeyInvalid, match="TESSERA_MARMOT_STATE_KEY_FILE"):
        app.runtime.run_command("marmot.join", net.join_params)
    (tmp_path / "state.key").write_text(key.new_key_hex() + "\n")
    monkeypatch.setenv("TESSERA_MARMOT_STATE_KEY_FILE", str(tmp_path / "state.key"))
    app.runtime.run_command("marmot.join", net.join_params)
    line, rumor = net.send(1, "with a key file", T0 + 1)
    deliver(app, line)
    assert history_ids(app, net.gid) == [rumor["id"]]


def test_wrong_key_is_a_clear_error_and_parks_nothing(app, net, monkeypatch):
    monkeypatch.setenv("TESSERA_MARMOT_STATE_KEY", "7e" * 32)  # a wrong key: the deprecated variable wins
    with pytest.raises(StateKeyWrong, match=r"cannot decrypt marmot group state: wrong key file\?"):
        load(ProtocolState(app.db, "marmot"), net.gid)
    lines = [net.send(1, f"waits for the right key {n}", T0 + n)[0] for n in range(3)]
    with app.db.write():
        queues.push_incoming(app.db, "marmot", lines, app.clock.now_ms())
    with pytest.raises(StateKeyWrong):  # the drain stops at once: no item is at fault
        drain.run_until_idle(app.runtime)
    assert app.db.value("SELECT count(*) FROM incoming") == 3
    assert app.db.value("SELECT count(*) FROM parked") + app.db.value("SELECT count(*) FROM deferred") == 0
    monkeypatch.delenv("TESSERA_MARMOT_STATE_KEY")
    drain.run_until_idle(app.runtime)
    assert len(history_ids(app, net.gid)) == 3


def test_both_key_settings_at_once_is_an_error_naming_both(marmot_app, net, monkeypatch, tmp_path: Path):
    (tmp_path / "state.key").write_text("5a" * 32 + "\n")
    monkeypatch.setenv("TESSERA_MARMOT_STATE_KEY", KEY_HEX)
    monkeypatch.setenv("TESSERA_MARMOT_STATE_KEY_FILE", str(tmp_path / "state.key"))
    with pytest.raises(StateKeyInvalid) as caught:
        marmot_app().runtime.run_command("marmot.join", net.join_params)
    assert "TESSERA_MARMOT_STATE_KEY and TESSERA_MARMOT_STATE_KEY_FILE" in str(caught.value)


def test_tick_fails_fast_when_groups_exist_but_the_key_does_not_fit(app, net, monkeypatch):
    line, rumor = net.send(1, "queued", T0 + 1)
    from core import queues

    with app.db.write():
        queues.push_incoming(app.db, "marmot", [line], app.clock.now_ms())
    monkeypatch.setenv("TESSERA_MARMOT_STATE_KEY", "7e" * 32)
    with pytest.raises(StateKeyError) as caught:
        TickDaemon(app, mode="until_idle").run()
    assert "\n" not in str(caught.value) and "TESSERA_MARMOT_STATE_KEY" in str(caught.value)
    assert app.db.value("SELECT count(*) FROM incoming") == 1  # nothing was touched
    monkeypatch.delenv("TESSERA_MARMOT_STATE_KEY")
    TickDaemon(app, mode="until_idle").run()
    assert history_ids(app, net.gid) == [rumor["id"]]


def test_the_key_job_is_silent_without_groups(marmot_app, settings):
    app = marmot_app(app_settings=attrs.evolve(settings, key_file=""))
    assert jobs.check_state_key(TickContext(runtime=app.runtime)) == 0


def test_state_on_disk_is_never_plaintext(app, net):
    for n in range(5):
        deliver(app, net.send(n % 3, f"message {n}", T0 + n)[0])
    deliver(app, net.commit(0, T0 + 10))
    loaded = load(ProtocolState(app.db, "marmot"), net.gid)
    assert loaded is not None
    secrets = [
        loaded.snapshot_bytes[:64],
        loaded.state.signature_private,
        *(pair.private for pair in loaded.state.private.keys.values()),
        loaded.state.keys.exporter_secret,
        loaded.state.keys.init_secret,
    ]
    app.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    files = b"".join(
        Path(app.db.path + suffix).read_bytes() for suffix in ("", "-wal") if Path(app.db.path + suffix).exists()
    )
    for secret in secrets:
        assert secret not in files
    for name, value in app.db.all("SELECT key, value FROM protocol_state WHERE protocol = 'marmot'"):
        if name.startswith("route/"):  # h tag -> group id: both are in the read models in the clear
            assert value == net.gid.encode(), name
            continue
        assert mls.snapshot(loaded.state)[:16] not in value, name
        if name.startswith((SEEN, CARRIED, EPOCHS)):  # ids, epochs, states, authors: in read models too
            continue
        if name == NEXT or name.startswith(NUMBER):  # which group is which number: no secret either
            continue
        assert value[:1] == (b"\x02" if name.startswith(("state/", "ratchets/")) else b"\x01"), name
        assert mls.snapshot(loaded.state)[:16] not in value, name


def test_after_a_rotation_the_state_opens_under_the_new_key_file(app, net, settings, tmp_path: Path):
    """The rotation keeps the state root, sealed under the new secret: sealed state opens unchanged."""
    deliver(app, net.send(1, "before the rotation", T0 + 1)[0])
    with app.db.read():
        before_key = SealedValues(ProtocolState(app.db, "marmot")).key
    keys.write_new_key_file(str(tmp_path / "new.key"))
    path = app.db.path
    app.close()
    with Database(path, settings, create=False) as db:
        encryption.rotate(db, keys.read_key_file(str(tmp_path / "new.key")))
    rotated = open_test_app(path, attrs.evolve(settings, key_file=str(tmp_path / "new.key")), [marmot], ["marmot"])
    try:
        with rotated.db.read():
            assert SealedValues(ProtocolState(rotated.db, "marmot")).key == before_key
        deliver(rotated, net.send(2, "after the rotation", T0 + 2)[0])
        assert len(history_ids(rotated, net.gid)) == 2
    finally:
        rotated.close()
    with pytest.raises(DatabaseEncrypted, match="wrong key or no key given"):
        Database(path, settings, create=False)  # the old key file no longer opens it


def test_the_state_key_is_derived_once_per_database(app, net, monkeypatch):
    """Every message opens the group's state with the same key: it is derived from the root once, not per item."""
    derivations: list[bytes] = []

    def counted(root: bytes, label: bytes) -> bytes:
        derivations.append(label)
        return derive(root, label)

    derive = keys.state_key
    monkeypatch.setattr(keys, "state_key", counted)
    for n in range(3):
        deliver(app, net.send(1, f"message {n}", T0 + 1 + n)[0])
    assert len(history_ids(app, net.gid)) == 3
    assert derivations.count(key.SEALER.label) <= 1  # once, or never when an earlier test's open derived it
    with app.db.read():
        root = encryption.state_root(app.db)
        assert root is not None
        assert SealedValues(ProtocolState(app.db, "marmot")).key == derive(root, key.SEALER.label)


def test_a_sealed_value_cannot_be_moved_to_another_key(app, net):
    values = SealedValues(ProtocolState(app.db, "marmot"))
    sealed = values.raw(f"state/{net.gid}")
    assert sealed is not None
    with pytest.raises(StateKeyWrong):
        open_sealed(values.key, f"state/{'00' * 32}", sealed)


def test_group_state_store_get_set_list_remove(app, net):
    store = GroupStateStore(ProtocolState(app.db, "marmot"))
    assert store.list() == [net.gid]
    current = store.get(net.gid)
    assert current is not None
    assert mls.restore(current).group_id.hex() == net.gid
    with app.db.write():
        store.set("cd" * 32, b"opaque state bytes", app.clock.now_ms())
    assert sorted(store.list()) == sorted([net.gid, "cd" * 32]) and store.get("cd" * 32) == b"opaque state bytes"
    with app.db.write():  # the intents of a handler: the whole state, and no ratchets beside it
        intents = store.set_intents("cd" * 32, b"x")
    assert [(intent.key, intent.value is None) for intent in intents] == [
        (f"state/{'cd' * 32}", False),
        (f"ratchets/{'cd' * 32}", True),
    ]
    with app.db.write():
        store.remove("cd" * 32, app.clock.now_ms())
    assert store.list() == [net.gid] and store.get("cd" * 32) is None
