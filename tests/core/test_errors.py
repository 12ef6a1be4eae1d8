"""The error hierarchy: every error is a TesseraError and the builtin that means the same,
and SQLite's own errors never leave the item pipeline raw."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from core import errors
from core.drain import run_until_idle
from tests.fixtures import sqlbug
from tests.helpers import push

PACKAGES = ("core", "schema_loader", "projectors", "jobs", "protocols")


def _every_error_type() -> list[type[errors.TesseraError]]:
    """Every TesseraError subclass the project defines, its plugins' included."""
    for package in PACKAGES:
        for module in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
            if ".template" not in module.name and not module.name.endswith("__main__"):
                importlib.import_module(module.name)
    found, pending = [], list(errors.TesseraError.__subclasses__())
    while pending:
        cls = pending.pop()
        if cls.__module__.split(".")[0] in PACKAGES and cls not in found:
            found.append(cls)
        pending.extend(cls.__subclasses__())
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


ERROR_TYPES = _every_error_type()


def test_the_walk_finds_errors_of_the_core_and_of_plugins():
    names = {cls.__name__ for cls in ERROR_TYPES}
    assert {"InvalidInput", "StatementFailed", "InvalidMessage", "GroupNotFound"} <= names


@pytest.mark.parametrize("error_type", ERROR_TYPES, ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
def test_every_error_also_subclasses_a_builtin_that_means_the_same(error_type):
    builtins = [base for base in error_type.__mro__ if base.__module__ == "builtins"]
    assert builtins[0] not in (Exception, BaseException), f"{error_type.__name__} subclasses no specific builtin"


@pytest.mark.parametrize(
    ("item", "sqlite_error"),
    [(b"reads-missing-table", "SQLError"), (b"duplicate-row", "ConstraintError")],
)
def test_a_plugins_failing_sql_parks_the_item_at_once_naming_the_sqlite_error(make_app, item, sqlite_error):
    app = make_app([sqlbug], ["sqlbug"])
    push(app, item, protocol="sqlbug")
    assert run_until_idle(app.runtime).outcomes == {"parked": 1}
    reason, attempts = app.db.one("SELECT reason, attempts FROM parked")
    assert attempts == 1
    assert reason.startswith(f"StatementFailed: SQL of the sqlbug plugin failed: {sqlite_error}: ")
    assert reason.endswith("fix the plugin, then run `tessera parked retry`")
    assert app.db.one("SELECT count(*) FROM events")[0] == 0  # the item's partial effects rolled back
