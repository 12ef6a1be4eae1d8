"""Hypothesis state machine: random commands, some raising, some repeated.

The database must always equal a plain-Python model of the ledger, and a
second connection must never see a command half-applied: a spy projector,
running *inside* each command's transaction, checks that another connection
still sees exactly the state before the command.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from core.db import Database
from core.errors import InvalidInput
from core.protocol import ProjectionConnection
from core.records import StoredEvent
from core.settings import Settings
from projectors import Projector
from tests.fixtures import ledger
from tests.helpers import open_test_app

ACCOUNTS = st.sampled_from(["alice", "bob", "carol"])
IDS = st.sampled_from([f"id{n}" for n in range(12)])


class Spy:
    """A projector that asks a second connection what it can see."""

    def __init__(self) -> None:
        self.check: Callable[[], str | None] | None = None
        self.violations: list[str] = []

    def apply(self, conn: ProjectionConnection, event: StoredEvent) -> None:
        if self.check is not None:
            problem = self.check()
            if problem:
                self.violations.append(problem)


class RunnerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="tessera-stateful-")
        self.spy = Spy()
        spy_projector = Projector("ledger.spy", "ledger", ("ledger_entries",), {"deposited": self.spy.apply})

        plugin = ledger.variant(
            commands=ledger.register_protocol().commands, projectors=(ledger.BALANCES, spy_projector)
        )
        s = Settings.load(env={}, busy_timeout_ms=2000)
        self.app = open_test_app(f"{self.dir}/db.sqlite", s, [plugin], ["ledger"])
        self.reader = Database(f"{self.dir}/db.sqlite", s, readonly=True)
        self.balances: dict[str, int] = {}
        self.entries: set[str] = set()
        self.last: tuple[str, dict] | None = None
        self.spy.check = self._outside_view_unchanged

    def teardown(self) -> None:
        self.reader.close()
        self.app.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- model --------------------------------------------------------------------

    def _outside_view_unchanged(self) -> str | None:
        seen: dict[str, int] = dict(self.reader.all("SELECT account, balance FROM ledger_accounts"))
        expected = dict(self.balances.items())
        if seen != expected:
            return f"another connection saw {seen} mid-command; committed state was {expected}"
        return None

    def _run(self, name: str, params: dict) -> None:
        self.app.runtime.run_command(name, params)
        self.last = (name, params)

    # --- rules ----------------------------------------------------------------------

    @rule(entry=IDS, account=ACCOUNTS, amount=st.integers(1, 50))
    def deposit(self, entry, account, amount):
        self._run("ledger.deposit", {"id": entry, "account": account, "amount": amount})
        if entry not in self.entries:
            self.entries.add(entry)
            self.balances[account] = self.balances.get(account, 0) + amount

    @rule(entry=IDS, source=ACCOUNTS, dest=ACCOUNTS, amount=st.integers(1, 60), explode=st.booleans())
    def transfer(self, entry, source, dest, amount, explode):
        params = {"id": entry, "from": source, "to": dest, "amount": amount, "explode": explode}
        if explode or self.balances.get(source, 0) < amount:
            expected = RuntimeError if self.balances.get(source, 0) >= amount else InvalidInput
            try:
                self.app.runtime.run_command("ledger.transfer", params)
            except expected:
                return
            raise AssertionError(f"transfer should have raised {expected.__name__}")
        self._run("ledger.transfer", params)
        for suffix, account, delta in ((":out", source, -amount), (":in", dest, amount)):
            if entry + suffix not in self.entries:
                self.entries.add(entry + suffix)
                self.balances[account] = self.balances.get(account, 0) + delta

    @precondition(lambda self: self.last is not None)
    @rule()
    def repeat_last(self):
        # A repeat either dedupes or is refused (a transfer re-checks the balance); never applies twice.
        assert self.last is not None
        name, params = self.last
        with contextlib.suppress(InvalidInput):
            self.app.runtime.run_command(name, params)

    # --- invariants ---------------------------------------------------------------------

    @invariant()
    def database_equals_model(self):
        seen: dict[str, int] = dict(self.app.db.all("SELECT account, balance FROM ledger_accounts"))
        assert seen == self.balances
        assert self.app.db.value("SELECT count(*) FROM events") == len(self.entries)
        assert self.app.db.value("SELECT count(*) FROM ledger_entries") == len(self.entries)

    @invariant()
    def other_connections_see_the_same(self):
        assert dict(self.reader.all("SELECT account, balance FROM ledger_accounts")) == self.balances

    @invariant()
    def nothing_partial_was_ever_visible(self):
        assert self.spy.violations == []


TestRunnerStateMachine = RunnerMachine.TestCase
TestRunnerStateMachine.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
