"""The core's own objects are what core/contract.py promises plugins (mypy checks these assignments)."""

from __future__ import annotations

from core import contract
from tests.fixtures import ledger


def test_the_core_objects_satisfy_the_contract(make_app):
    app: contract.App = make_app([ledger], ["ledger"])
    runtime: contract.Runtime = app.runtime
    db: contract.Database = app.db
    ctx: contract.Context = runtime.context("ledger")
    conn: contract.Connection = ctx.conn
    assert ctx.db is db and ctx.runtime is runtime
    with db.read():
        assert conn.execute("SELECT count(*) FROM events").fetchall() == [(0,)]
