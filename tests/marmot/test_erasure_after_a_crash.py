"""The erasure of a replaced group-state key runs after the commit, off the writer's path: a process killed in
between (SIGKILL, a real process) leaves a database that opens and reads its current state, and the old key
on disk only until the next commit of that state or, when the process lives on, its close.

The writer is tests/marmot/erasing_writer.py.  To land the kill inside the window every time, another process
holds a shared lock on the ratchets' key file: the writer still takes the key prepared there (a shared lock
of its own) and commits, but its erasing thread's exclusive overwrite waits until the lock is let go.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from core.state import ProtocolState
from protocols.libraries import erasable
from protocols.marmot.state.key import SEALER, load_key
from protocols.marmot.state.store import load, ratchets_name
from tests.file_locks import lock_held_elsewhere
from tests.helpers import ROOT
from tests.marmot._net import T0
from tests.marmot.conftest import deliver


class Writer:
    """The writer process and the commands it answers."""

    def __init__(self, db_path: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.marmot.erasing_writer", db_path],
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.answer("ready")

    def ask(self, command: str, answer: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        self.answer(answer)

    def answer(self, expected: str) -> None:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        line = self.proc.stdout.readline().strip()
        assert line == expected, line or self.proc.stderr.read()[-3000:]

    def answered_within(self, seconds: float) -> bool:
        assert self.proc.stdout is not None
        return bool(select.select([self.proc.stdout], [], [], seconds)[0])


@pytest.fixture
def writer(app) -> Iterator[Writer]:
    erasable.wait_for_erasures()  # the test's own app leaves no erasure behind to race the writer's
    started = Writer(app.db.path)
    yield started
    if started.proc.poll() is None:
        started.proc.kill()
    started.proc.wait(timeout=30)


def _ratchets(app, net) -> tuple[bytes, bytes]:
    """The stored ratchets of ``net``'s group, and the version key now in its slot."""
    name = ratchets_name(net.gid)
    with app.db.read():
        sealed = ProtocolState(app.db, "marmot").stored(name)
    assert sealed is not None
    version = erasable.version_of(sealed)
    raw = erasable._held_at(erasable.key_file(app.db.path, SEALER.label, name).read_bytes(), version)
    assert int.from_bytes(raw[:8], "big") == version
    return sealed, raw[8:40]


def _key_file_bytes(app, net) -> bytes:
    return erasable.key_file(app.db.path, SEALER.label, ratchets_name(net.gid)).read_bytes()


def _opens(app, net, sealed: bytes) -> bool:
    try:
        erasable.open_sealed(app.db.path, load_key(app.db), SEALER.label, ratchets_name(net.gid), sealed)
    except erasable.KeyGone:
        return False
    return True


def _first_messages(app, net, writer: Writer) -> tuple[list[str], bytes, bytes]:
    """The writer commits first messages, erasing what each replaced, until the key of the group state's next
    version is one it prepared itself (the erasure of the version a whole key file of slots earlier prepares
    it); their texts, the ratchets it stored last, and their key."""
    texts: list[str] = []
    while not texts or erasable.version_of(_ratchets(app, net)[0]) < erasable._SLOTS:
        texts.append(f"first {len(texts)}")
        writer.ask(f"deliver {net.send(1, texts[-1], T0 + len(texts))[0].hex()}", "committed")
        writer.ask("settle", "settled")
    return texts, *_ratchets(app, net)


@contextlib.contextmanager
def _commit_with_its_erasure_held_back(app, net, writer: Writer, text: str) -> Iterator[tuple[list[str], bytes, bytes]]:
    """Inside the block: the writer has committed its first messages and then one from ``text``, whose erasure
    cannot run; the texts of the first ones, the ratchets the last commit replaced, and their key."""
    texts, replaced, replaced_key = _first_messages(app, net, writer)
    with lock_held_elsewhere(erasable.key_file(app.db.path, SEALER.label, ratchets_name(net.gid)), shared=True):
        writer.ask(f"deliver {net.send(2, text, T0 + len(texts) + 1)[0].hex()}", "committed")
        current, _ = _ratchets(app, net)
        assert erasable.version_of(current) == erasable.version_of(replaced) + 1  # the commit is there ...
        assert replaced_key in _key_file_bytes(app, net) and _opens(app, net, replaced)  # ... the old key too
        yield texts, replaced, replaced_key


def _history(app) -> list[str]:
    return [row[0] for row in app.db.all("SELECT content FROM marmot_messages ORDER BY created_at")]


def test_a_kill_between_the_commit_and_the_erasure_leaves_a_database_that_reads(app, net, writer) -> None:
    with _commit_with_its_erasure_held_back(app, net, writer, "before the kill") as (texts, replaced, replaced_key):
        writer.proc.send_signal(signal.SIGKILL)
        assert writer.proc.wait(timeout=30) == -signal.SIGKILL
    assert replaced_key in _key_file_bytes(app, net)  # the window: no one erased it
    current, _ = _ratchets(app, net)
    assert _opens(app, net, current)
    with app.db.read():
        assert load(ProtocolState(app.db, "marmot"), net.gid) is not None
    assert _history(app) == [*texts, "before the kill"]
    deliver(app, net.send(0, "after the restart", T0 + len(texts) + 2)[0])  # the group state's next commit
    assert replaced_key not in _key_file_bytes(app, net) and not _opens(app, net, replaced)
    assert _history(app) == [*texts, "before the kill", "after the restart"]


def test_the_close_waits_for_the_erasure(app, net, writer) -> None:
    with _commit_with_its_erasure_held_back(app, net, writer, "before the close") as (_, replaced, replaced_key):
        assert writer.proc.stdin is not None
        writer.proc.stdin.write("close\n")
        writer.proc.stdin.flush()
        assert not writer.answered_within(0.5)  # closing: its erasure waits for the lock
        assert replaced_key in _key_file_bytes(app, net)
    writer.answer("closed")
    assert writer.proc.wait(timeout=30) == 0
    assert replaced_key not in _key_file_bytes(app, net) and not _opens(app, net, replaced)
    assert _opens(app, net, _ratchets(app, net)[0])
