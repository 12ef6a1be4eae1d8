"""The error hierarchy: every error is a TesseraError and the builtin that means the same,
and SQLite's own errors never leave the item pipeline raw."""

from __future__ import annotations

import inspect

import pytest

from core import errors
from core.drain import run_until_idle
from tests.fixtures import sqlbug
from tests.helpers import push

ERROR_TYPES = [
    cls
    for _, cls in inspect.getmembers(errors, inspect.isclass)
    if issubclass(cls, errors.TesseraError) and cls is not errors.TesseraError
]


@pytest.mark.parametrize("error_type", ERROR_TYPES, ids=lambda cls: cls.__name__)
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

