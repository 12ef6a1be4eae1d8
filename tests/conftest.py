"""Shared fixtures: real SQLite files in tmp_path, plugins registered explicitly."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from core.clock import ManualClock
from core.db import Database
from core.plugins import make_plugin_manager
from core.settings import Settings
from schema_loader.setup import open_app

ROOT = Path(__file__).resolve().parent.parent
VECTORS = Path(__file__).resolve().parent / "vectors"

# Subprocesses started by tests run the same interpreter and see the checkout.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture
def settings() -> Settings:
    """Fast retries and short timeouts; the environment is ignored."""
    return Settings.load(
        env={}, retry_base_ms=5, retry_max_ms=50, max_attempts=3, busy_timeout_ms=2000, lease_ttl_ms=2000
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


def open_core_db(path: str, settings: Settings) -> Database:
    """A Database at ``path`` with the core schema applied."""
    from schema_loader import apply_schemas, source_for_package

    db = Database(path, settings)
    apply_schemas(db, [source_for_package("core", "core")])
    return db


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
def make_app(tmp_path: Path, settings: Settings, clock: ManualClock):
    """``make_app(plugins, protocols, path=None)``: an App on a real file in tmp_path."""
    opened = []

    def make(plugins, protocols, *, path: str | None = None, app_settings: Settings | None = None):
        pm = make_plugin_manager(plugins, entry_points=False)
        app = open_app(
            app_settings or settings,
            pm,
            enable=protocols,
            create=True,
            clock=clock,
            path=path or str(tmp_path / f"app{len(opened)}.db"),
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
