"""The projector test kit: prove a plugin's projectors idempotent and deterministic.

Give it the plugin modules and a list of items (wire blobs and commands).  It
runs them through the real pipeline on temporary SQLite files, then checks:

``check_idempotent``
    every item applied twice gives tables identical to applying it once, and
    every logged event applied twice *to the projector itself* (bypassing the
    log's dedupe) changes nothing;
``check_deterministic``
    replaying the event log into fresh tables — under a clock shifted by
    years, with SQL time/random functions denied — reproduces the live tables;
``check_partition_independent``
    replaying partitions in reverse order changes nothing, and neither does
    shuffling the events within each partition for every projector declaring
    ``order_independent`` (each is replayed on its own, so the other
    projectors enabled beside it never switch the shuffle off).

A failure raises :class:`ProjectorContractError` naming the table and the
first differing row.
"""

from __future__ import annotations

import contextlib
import random
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import apsw
import attrs

from core import drain, eventlog, keys, queues
from core.app import App, open_app
from core.clock import ManualClock
from core.errors import InvalidInput, ProjectionError
from core.plugins import make_plugin_manager
from core.settings import Settings
from projectors import compare, replay
from projectors.replay import projection_ddl

NONDETERMINISTIC_SQL = frozenset(
    {
        "random",
        "randomblob",
        "current_timestamp",
        "current_date",
        "current_time",
        "date",
        "time",
        "datetime",
        "julianday",
        "unixepoch",
        "strftime",
        "timediff",
        "changes",
        "last_insert_rowid",
        "total_changes",
    }
)
_SHIFT_S = 10 * 365 * 86_400


class ProjectorContractError(ProjectionError, AssertionError):
    """A projector broke the contract; the message names the first differing row."""


@attrs.frozen
class Blob:
    """A wire blob to ingest for ``protocol``."""

    protocol: str
    data: bytes


@attrs.frozen
class Run:
    """A command to run (``protocol.command``) with its params."""

    name: str
    params: dict[str, Any] = attrs.field(factory=dict)


Item = Blob | Run


class ProjectorKit:
    """Runs items for a set of plugins on temporary databases."""

    def __init__(
        self,
        plugins: Sequence[Any],
        protocols: Sequence[str],
        workdir: Path | None = None,
        *,
        settings: Settings | None = None,
    ):
        self.plugins = list(plugins)
        self.protocols = list(protocols)
        self._tmp = None if workdir is not None else tempfile.TemporaryDirectory(prefix="tessera-kit-")
        self.workdir = Path(workdir) if workdir is not None else Path(self._tmp.name)  # type: ignore[union-attr]
        self.settings = settings or Settings.load(
            env={}, key_file=self._key_file(), retry_base_ms=1, retry_max_ms=10, max_attempts=3
        )
        self._count = 0

    def _key_file(self) -> str:
        """The kit's databases are encrypted, as ``tessera init`` makes them, under a key file of the workdir's."""
        path = self.workdir / "kit.key"
        if not path.exists():
            keys.write_new_key_file(str(path))
        return str(path)

    def open(self, name: str) -> App:
        """A fresh database with the plugins' schemas applied."""
        self._count += 1
        pm = make_plugin_manager(self.plugins, entry_points=False)
        path = self.workdir / f"{self._count:03d}-{name}.db"
        return open_app(self.settings, pm, enable=self.protocols, create=True, clock=ManualClock(), path=str(path))

    def run(self, items: Sequence[Item], *, name: str = "live", times: int = 1) -> App:
        """Apply ``items`` in order (each ``times`` times in a row), draining after each."""
        app = self.open(name)
        for item in items:
            for _ in range(times):
                _apply_item(app, item)
        return app

    def projectors(self, app: App) -> list[Any]:
        return app.projectors(self.protocols)

    def owned_tables(self, app: App) -> list[str]:
        return [t for p in self.projectors(app) for t in p.tables]

    def replay(
        self, app: App, *, shuffle_seed: int | None = None, projectors: Sequence[Any] | None = None, **options: Any
    ) -> apsw.Connection:
        """Replay ``app``'s log into fresh projection tables (options as in replay.replay).

        ``projectors`` replays only those (default: every projector of the
        kit's protocols).  ``shuffle_seed`` shuffles each partition's events,
        which only projectors declared ``order_independent`` allow: asking it
        of any other raises InvalidInput rather than quietly keeping the order.
        """
        chosen = list(projectors) if projectors is not None else self.projectors(app)
        if shuffle_seed is not None:
            ordered = [p.name for p in chosen if not p.order_independent]
            if ordered:
                raise InvalidInput(
                    f"cannot shuffle the events of {', '.join(ordered)}: not declared "
                    "order_independent; pass projectors=[...] with order-independent ones only"
                )
        with app.db.read():
            events = list(eventlog.read_range(app.db))

        def reorder(group: Sequence[Any], stream: Sequence[Any]) -> Sequence[Any]:
            if shuffle_seed is None:
                return sorted(stream, key=lambda e: e.seq)
            shuffled = list(stream)
            random.Random(shuffle_seed).shuffle(shuffled)
            return shuffled

        return replay.replay_log(
            events,
            chosen,
            lambda group: projection_ddl(app, group),
            app.runtime.upcast,
            reorder=reorder,
            keep_order=True,
            **options,
        )

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


def _apply_item(app: App, item: Item) -> None:
    if isinstance(item, Blob):
        with app.db.write():
            queues.push_incoming(app.db, item.protocol, [item.data], app.clock.now_ms())
    else:
        app.runtime.run_command(item.name, item.params)
    drain.run_until_idle(app.runtime, advance_clock=True)


def assert_same_tables(expected: Any, actual: Any, tables: Sequence[str], what: str) -> None:
    for table in tables:
        difference = compare.diff_tables(expected, actual, table)
        if difference is not None:
            raise ProjectorContractError(f"{what}:\n{difference.describe()}")


# --- the checks ---------------------------------------------------------------


def check_idempotent(kit: ProjectorKit, items: Sequence[Item]) -> None:
    """Items twice == items once, and events applied twice to projectors == once."""
    once = kit.run(items, name="once")
    twice = kit.run(items, name="twice", times=2)
    tables = kit.owned_tables(once)
    assert_same_tables(once.db.conn, twice.db.conn, tables, "applying every item twice changed the tables")
    replayed_once = kit.replay(once)
    replayed_twice = kit.replay(once, times=2)
    assert_same_tables(
        replayed_once,
        replayed_twice,
        tables,
        "a projector is not idempotent: applying each event twice changed its tables",
    )


@contextlib.contextmanager
def _shifted_clock() -> Iterator[None]:
    """Python's clock moved years ahead: a projector reading it writes different rows."""
    real_time, real_ns = time.time, time.time_ns
    with (
        mock.patch("time.time", lambda: real_time() + _SHIFT_S),
        mock.patch("time.time_ns", lambda: real_ns() + _SHIFT_S * 1_000_000_000),
    ):
        yield


class _NondeterminismGuard:
    """An apsw authorizer that denies SQL reading the clock or randomness, and remembers what."""

    def __init__(self) -> None:
        self.denied: list[str] = []

    def __call__(self, action: int, arg1: Any, arg2: Any, dbname: Any, trigger: Any) -> int:
        if action == apsw.SQLITE_FUNCTION and (arg2 or "").lower() in NONDETERMINISTIC_SQL:
            self.denied.append(arg2)
            return apsw.SQLITE_DENY
        return apsw.SQLITE_OK


def check_deterministic(kit: ProjectorKit, items: Sequence[Item]) -> None:
    """Replaying the log (clock shifted, SQL time/random denied) reproduces the live tables."""
    live = kit.run(items, name="live")
    guard = _NondeterminismGuard()
    try:
        with _shifted_clock():
            replayed = kit.replay(live, authorizer=guard)
    except apsw.Error as exc:
        if not guard.denied:
            raise
        raise ProjectorContractError(
            f"a projector calls SQL {guard.denied[0]}(), which reads the clock or randomness; compute values "
            "from the event (event.created_at_ms, event.data) instead"
        ) from exc
    assert_same_tables(
        replayed,
        live.db.conn,
        kit.owned_tables(live),
        "replaying the event log did not reproduce the live tables (expected = replay, "
        "actual = live); a projector depends on something besides its events",
    )


def check_partition_independent(kit: ProjectorKit, items: Sequence[Item], *, seed: int = 7) -> None:
    """Partitions replayed in reverse (and shuffled where declared) give the same tables.

    Each projector declared ``order_independent`` is replayed on its own with
    every partition's events shuffled, so the claim is checked whatever the
    other projectors (of this plugin or of others enabled beside it) declare.
    """
    live = kit.run(items, name="live")
    forward = kit.replay(live)
    reverse = kit.replay(live, partition_order=lambda keys: list(reversed(keys)))
    tables = kit.owned_tables(live)
    assert_same_tables(
        forward,
        reverse,
        tables,
        "replaying partitions in another order changed the tables; a projector reads or "
        "writes across partitions (or uses arrival-order rowids)",
    )
    for projector in kit.projectors(live):
        if projector.order_independent:
            shuffled = kit.replay(live, shuffle_seed=seed, projectors=[projector])
            assert_same_tables(
                forward,
                shuffled,
                projector.tables,
                f"{projector.name}, declared order_independent, gives different tables when each "
                "partition's events are shuffled",
            )


class ProjectorContract:
    """Subclass in your plugin's tests (name it ``Test...``) and fill in three things.

    ``plugins`` (modules), ``protocols`` (names to enable) and ``items()``
    (the inputs to exercise).  Each check then runs as its own test.
    """

    plugins: Sequence[Any] = ()
    protocols: Sequence[str] = ()

    def items(self) -> Sequence[Item]:
        raise NotImplementedError("return the wire blobs and commands to exercise")

    def _kit(self, tmp_path: Path) -> ProjectorKit:
        return ProjectorKit(self.plugins, self.protocols, tmp_path)

    def test_projectors_are_idempotent(self, tmp_path: Path) -> None:
        check_idempotent(self._kit(tmp_path), self.items())

    def test_projectors_are_deterministic(self, tmp_path: Path) -> None:
        check_deterministic(self._kit(tmp_path), self.items())

    def test_projectors_are_partition_independent(self, tmp_path: Path) -> None:
        check_partition_independent(self._kit(tmp_path), self.items())
