"""Helpers shared by the test suite, one section per area.

Fixtures stay in the conftest files; what a test calls lives here: paths,
opening apps and databases, queueing items, worker processes and the files
they leave, the command line, and reading SQLite's view of a schema.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import apsw
from click.testing import CliRunner, Result

from core import drain, keys, queues
from core.app import INSTANCE_KEY, App, open_app
from core.clock import Clock
from core.db import Database, Row, connection_key, file_encryption
from core.plugins import make_plugin_manager
from core.records import OutcomeKind
from core.settings import SETTINGS, Settings
from schema_loader import apply_schemas, source_for_package

# --- paths ------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "vectors"
FIXTURES = ROOT / "tests" / "fixtures"

# --- the test databases' key ---------------------------------------------------------------------


def _run_key_file() -> str:
    """The run's key file: the one the process that started us made, or a new one this process removes at exit."""
    inherited = os.environ.get("TESTS_KEY_FILE")
    if inherited:
        return inherited
    folder = tempfile.mkdtemp(prefix="tessera-test-key-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return os.path.join(folder, "test.key")


#: Every database the suite makes is encrypted under this one key, in-process (the ``settings`` fixture,
#: :func:`worker_settings`) and in the processes it starts (``TESSERA_KEY_FILE``, set by tests/conftest.py).
#: Made once per run; the suite's own processes find it in ``TESTS_KEY_FILE`` (a name ``clean_environment`` keeps).
TEST_KEY_FILE = _run_key_file()
if not os.path.exists(TEST_KEY_FILE):
    keys.write_new_key_file(TEST_KEY_FILE)
os.environ["TESTS_KEY_FILE"] = TEST_KEY_FILE


def raw_connection(path: str, flags: int = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE) -> apsw.Connection:
    """A bare apsw connection to ``path`` (no Tessera setup), keyed with the test key when the file is encrypted."""
    conn = apsw.Connection(path, flags=flags)
    if file_encryption(path) == "encrypted":
        connection_key(conn, keys.read_key_file(TEST_KEY_FILE))
    return conn


# --- apps and databases -------------------------------------------------------------------------

#: What the ``make_app`` fixture hands out: ``make_app(plugins, protocols, path=None, app_settings=None)``.
MakeApp = Callable[..., App]


class PluginEnvironment(Mapping[str, str]):
    """The process's environment, read when asked, without the core's own keys.

    Tests ignore a developer's ``TESSERA_BATCH_MS`` and the like, but set plugin
    settings (``TESSERA_MARMOT_SNAPSHOTS``) with ``monkeypatch.setenv`` while an
    app is open, as an operator would before starting a command.
    """

    def __getitem__(self, key: str) -> str:
        if key in _CORE_KEYS:
            raise KeyError(key)
        return os.environ[key]

    def __iter__(self) -> Iterator[str]:
        return (key for key in os.environ if key not in _CORE_KEYS)

    def __len__(self) -> int:
        return sum(1 for _ in self)


_CORE_KEYS = {setting.env_key for setting in SETTINGS}

# Worker processes retry and idle briefly, and wait long for a lock other processes hold.
WORKER_SETTINGS = {
    "retry_base_ms": 20,
    "retry_max_ms": 200,
    "max_attempts": 3,
    "busy_timeout_ms": 10_000,
    "idle_max_ms": 50,
}


def open_core_db(path: str, settings: Settings) -> Database:
    """A Database at ``path`` with the core schema applied."""
    db = Database(path, settings)
    apply_schemas(db, [source_for_package("core", "core")])
    return db


def open_test_app(
    path: str,
    settings: Settings,
    plugins: Sequence[object],
    protocols: Sequence[str],
    *,
    clock: Clock | None = None,
    create: bool = True,
) -> App:
    """An App on ``path`` with exactly ``plugins`` registered (no entry points) and ``protocols`` enabled."""
    return open_app(
        settings,
        make_plugin_manager(list(plugins), entry_points=False),
        enable=protocols,
        create=create,
        clock=clock,
        path=path,
    )


#: Empty databases this process made once, by key file, plugin modules and protocols: see
#: :func:`open_new_test_app`.
_EMPTY_DATABASES: dict[tuple[str, tuple[str, ...], tuple[str, ...]], str] = {}


def open_new_test_app(
    path: str,
    settings: Settings,
    plugins: Sequence[ModuleType],
    protocols: Sequence[str],
    *,
    clock: Clock | None = None,
) -> App:
    """:func:`open_test_app`, where a file not at ``path`` yet starts as a copy of an empty database made once per
    process with the same key file, plugins and protocols: creating the schemas costs several times what opening
    them does (a Marmot database ~1 s against ~0.1 s on the loaded 2-core machine), and the Marmot tests make
    hundreds.  The copy has no instance id, so it gets one of its own on opening, as a database ``init`` made
    does."""
    if os.path.exists(path):
        return open_test_app(path, settings, plugins, protocols, clock=clock)
    made = (settings.key_file, tuple(plugin.__name__ for plugin in plugins), tuple(protocols))
    empty = _EMPTY_DATABASES.get(made)
    if empty is None:
        folder = tempfile.mkdtemp(prefix="tessera-test-empty-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        empty = os.path.join(folder, "empty.db")
        app = open_test_app(empty, settings, plugins, protocols)
        with app.db.write():
            app.db.execute("DELETE FROM kv WHERE key = ?", (INSTANCE_KEY,))
        app.close()
        assert not os.path.exists(f"{empty}-wal"), "closing the last connection checkpoints and removes the WAL"
        _EMPTY_DATABASES[made] = empty
    shutil.copyfile(empty, path)
    return open_test_app(path, settings, plugins, protocols, clock=clock, create=False)


def worker_settings(**overrides: int) -> Settings:
    """Settings for a daemon run as its own process by a test: :data:`WORKER_SETTINGS`, then ``overrides``.

    Plugin settings come from the environment the test set (``wide_windows`` widens the daemon's rollback
    window with ``TESSERA_MARMOT_SNAPSHOTS``, and the test's model of the outcome reads the same variable);
    the core's own keys do not, as in the ``settings`` fixture.
    """
    values: dict[str, Any] = {**WORKER_SETTINGS, **overrides}
    return Settings.load(env=PluginEnvironment(), key_file=TEST_KEY_FILE, **values)


# --- queues ---------------------------------------------------------------------------------------


def push(app: App, *blobs: bytes, protocol: str = "ledger") -> None:
    """Queue ``blobs`` as incoming items of ``protocol`` (by default the core tests' ledger), stamped now."""
    known = app.runtime.registry.protocols.get(protocol)  # an unknown one is queued to be parked
    order = None if known is None else known.arrival_order
    with app.db.write():
        queues.push_incoming(app.db, protocol, blobs, app.clock.now_ms(), order=order)


def next_incoming_kind(app: App) -> OutcomeKind:
    """Handle the oldest incoming item and say what became of it; the test expects one to be waiting."""
    outcome = drain.process_next_incoming(app.runtime)
    assert outcome is not None, "no incoming item was waiting"
    return outcome.kind


def ingest(app: App, blobs: Iterable[bytes], protocol: str = "example") -> drain.DrainSummary:
    """Queue ``blobs`` and drain everything, jumping the clock to each retry and recheck."""
    push(app, *blobs, protocol=protocol)
    return drain.run_until_idle(app.runtime, advance_clock=True)


# --- the ledger, the core tests' protocol --------------------------------------------------------


def ledger_balances(app: App) -> dict[str, int]:
    """account -> balance, as the ledger's projector keeps them."""
    return dict(app.db.all("SELECT account, balance FROM ledger_accounts"))


# --- worker processes and the files they leave -------------------------------------------------------


def start_worker(module: str, *args: str) -> subprocess.Popen[str]:
    """``python -m module args`` run from the checkout, returned once it has printed ``ready``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    return proc


def finish_worker(proc: subprocess.Popen[str], timeout: float = 120) -> str:
    """Wait for ``proc`` to exit 0 (else fail with its output); returns what it printed."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}: {out}\n{err[-3000:]}"
    return out


def query_file(path: str, sql: str, params: Sequence[object] = ()) -> list[Row]:
    """Rows of ``sql`` on its own short-lived connection, waiting up to 10 s for other processes' locks;
    typed like :meth:`Database.all`, since the caller knows its columns."""
    conn = raw_connection(path)
    conn.set_busy_timeout(10_000)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.02) -> bool:
    """Poll ``predicate`` every ``step`` seconds for up to ``timeout`` seconds; returns its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


# --- the command line ---------------------------------------------------------------------------------

#: ``tessera`` as its own process, from this checkout.
TESSERA = [sys.executable, "-m", "jobs"]


def clean_environment(**settings: str) -> dict[str, str]:
    """This process's environment without its ``TESSERA_`` settings, plus ``settings``, for a process
    that runs this checkout's code."""
    inherited = {name: value for name, value in os.environ.items() if not name.startswith("TESSERA_")}
    return {**inherited, "PYTHONPATH": str(ROOT), "TESSERA_KEY_FILE": TEST_KEY_FILE, **settings}


def invoke(*args: str, env: dict[str, str] | None = None, input: bytes | str | None = None) -> Result:
    """Run ``tessera args`` in this process through click's runner; exceptions propagate."""
    from jobs.cli import cli

    return CliRunner().invoke(cli, list(args), env=env, input=input, catch_exceptions=False)


def one_line_error(outcome: Result | subprocess.CompletedProcess[str]) -> str:
    """The single ``Error:`` line a command that failed with exit code 1 printed on stderr (in process or not;
    with ``--json`` the error object goes to stdout besides)."""
    if isinstance(outcome, Result):
        code, output = outcome.exit_code, outcome.stderr
    else:
        code, output = outcome.returncode, outcome.stderr
    assert code == 1, output
    lines = [line for line in output.strip().splitlines() if not _SLOW_STATEMENT.match(line)]
    assert len(lines) == 1 and lines[0].startswith("Error: "), lines
    return lines[0]


#: core.db's warning of a statement over ``slow_statement_ms``: on a loaded machine any command may log one on
#: stderr, beside (not part of) what the command answers.
_SLOW_STATEMENT = re.compile(r"\S+ \S+ WARNING tessera\.db: slow statement \(")


def cli_options(**values: object) -> list[str]:
    """``--name value`` pairs in the order given: ``cli_options(members=2)`` is ``["--members", "2"]``."""
    return [part for name, value in values.items() for part in (f"--{name}", str(value))]


def marmot_join_args(folder: Path) -> list[str]:
    """``marmot join`` with the observer files ``tessera marmot simulate --out folder`` wrote."""
    return [
        "marmot",
        "join",
        "--identity",
        str(folder / "observer.identity.json"),
        "--welcome",
        str(folder / "observer.welcome.json"),
    ]


# --- SQLite's view of a schema --------------------------------------------------------------------------


def index_shapes(source: Database | apsw.Connection, table: str) -> dict[str, tuple[object, ...]]:
    """name -> (unique, partial, ((column, desc, collation), ...)) for the explicit indexes of ``table``."""
    shapes: dict[str, tuple[object, ...]] = {}
    for name, unique, origin, partial in source.execute(
        'SELECT name, "unique", origin, partial FROM pragma_index_list(?)', (table,)
    ).fetchall():
        if origin != "c":
            continue
        keys = tuple(
            (column, bool(descending), collation.upper())
            for column, descending, collation in source.execute(
                "SELECT name, desc, coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno", (name,)
            )
        )
        shapes[str(name)] = (bool(unique), bool(partial), keys)
    return shapes


# --- hostile input ------------------------------------------------------------------------------------------


def field_root(field: str | None) -> str | None:
    """The top-level key of a field path such as ``body[0].x``."""
    return None if field is None else field.split("[")[0].split(".")[0]
