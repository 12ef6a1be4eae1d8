"""Shared fixtures: real SQLite files in tmp_path, plugins registered explicitly."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from core.app import App
from core.clock import ManualClock
from core.db import Database
from core.settings import Settings

# ROOT and open_core_db are re-exported for the test modules that still import them from here.
from tests.helpers import ROOT as ROOT
from tests.helpers import TEST_KEY_FILE, MakeApp, PluginEnvironment, open_core_db, open_test_app

# Subprocesses started by tests run the same interpreter and see the checkout.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# ... and encrypt the databases they make, as `tessera init` does by default.
os.environ["TESSERA_KEY_FILE"] = TEST_KEY_FILE
# ... and take Ctrl-C as from a terminal.  A run started as a background job of a shell without job control (`cmd &`
# in a script) starts with SIGINT ignored, and the processes it starts would inherit that: a test stopping
# `status --watch` or a relay with SIGINT would wait for it in vain and leave it running.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def settings() -> Settings:
    """Fast retries and short timeouts, the test key (databases are encrypted); the environment is ignored,
    but for plugins' settings."""
    return Settings.load(
        env=PluginEnvironment(),
        key_file=TEST_KEY_FILE,
        retry_base_ms=5,
        retry_max_ms=50,
        max_attempts=3,
        busy_timeout_ms=2000,
        lease_ttl_ms=2000,
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "tessera.db")


@pytest.fixture
def fresh_db(db_path: str, settings: Settings):
    db = Database(db_path, settings)
    yield db
    db.close()


@pytest.fixture
def db(db_path: str, settings: Settings):
    """A real file with the core schema."""
    database = open_core_db(db_path, settings)
    yield database
    database.close()


@pytest.fixture
def other(db, settings: Settings):
    """A second connection to the same file (another process, in real life)."""
    database = Database(db.path, settings)
    yield database
    database.close()


@pytest.fixture
def make_app(tmp_path: Path, settings: Settings, clock: ManualClock) -> Iterator[MakeApp]:
    """``make_app(plugins, protocols, path=None)``: an App on a real file in tmp_path."""
    opened: list[App] = []

    def make(
        plugins: Sequence[object],
        protocols: Sequence[str],
        *,
        path: str | None = None,
        app_settings: Settings | None = None,
    ) -> App:
        app = open_test_app(
            path or str(tmp_path / f"app{len(opened)}.db"), app_settings or settings, plugins, protocols, clock=clock
        )
        opened.append(app)
        return app

    yield make
    for app in opened:
        app.close()


@pytest.fixture
def example_app(make_app):
    from protocols import example

    return make_app([example], ["example"])


@pytest.fixture
def app(make_app: MakeApp) -> App:
    """An App with the ledger, the core tests' protocol (the Marmot and rebuild tests bring their own ``app``)."""
    from tests.fixtures import ledger

    return make_app([ledger], ["ledger"])
