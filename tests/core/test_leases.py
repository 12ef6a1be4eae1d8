"""Named leases with fencing tokens: unit tests and a Hypothesis state machine."""

from __future__ import annotations

import shutil
import tempfile

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from core import drain, leases, queues
from core.db import Database
from core.errors import LeaseLost
from core.settings import Settings
from tests.fixtures import ledger
from tests.helpers import open_core_db

T0 = 1_700_000_000_000
TTL = 1_000


def test_first_taker_gets_token_one(db):
    lease = leases.try_acquire(db, "tick", "a", TTL, T0)
    assert lease is not None
    assert (lease.name, lease.owner, lease.token, lease.expires_at_ms) == ("tick", "a", 1, T0 + TTL)
    assert db.one("SELECT owner, token, expires_at_ms, acquired_at_ms FROM leases WHERE name = 'tick'") == (
        "a",
        1,
        T0 + TTL,
        T0,
    )


def test_renewal_keeps_the_token_and_extends_expiry(db):
    leases.try_acquire(db, "tick", "a", TTL, T0)
    renewed = leases.try_acquire(db, "tick", "a", TTL, T0 + 600)
    assert renewed is not None
    assert (renewed.token, renewed.expires_at_ms) == (1, T0 + 600 + TTL)
    # acquired_at is the takeover time, not the renewal time
    assert leases.current(db, "tick") == {
        "owner": "a",
        "token": 1,
        "expires_at_ms": T0 + 600 + TTL,
        "acquired_at_ms": T0,
    }


def test_another_owner_waits_until_expiry_then_takes_over_with_a_new_token(db, other):
    leases.try_acquire(db, "tick", "a", TTL, T0)
    assert leases.try_acquire(other, "tick", "b", TTL, T0 + TTL - 1) is None
    taken = leases.try_acquire(other, "tick", "b", TTL, T0 + TTL)  # expiry is exclusive
    assert taken is not None
    assert (taken.owner, taken.token, taken.expires_at_ms) == ("b", 2, T0 + 2 * TTL)
    # The old holder cannot renew any more: it is the other owner's lease now.
    assert leases.try_acquire(db, "tick", "a", TTL, T0 + TTL + 1) is None


def test_leases_are_independent_by_name(db):
    tick = leases.try_acquire(db, "tick", "a", TTL, T0)
    export = leases.try_acquire(db, "export", "b", TTL, T0)
    assert tick is not None and tick.token == 1
    assert export is not None and export.token == 1
    assert leases.try_acquire(db, "tick", "b", TTL, T0) is None


def test_release_lets_the_next_taker_in_at_once_with_a_higher_token(db, other):
    lease = leases.try_acquire(db, "tick", "a", TTL, T0)
    assert lease is not None
    leases.release(db, lease)
    released = leases.current(db, "tick")
    assert released is not None and released["expires_at_ms"] == 0
    taken = leases.try_acquire(other, "tick", "b", TTL, T0 + 1)
    assert taken is not None and taken.token == 2
    # Releasing a lease we no longer hold changes nothing.
    leases.release(db, lease)
    assert leases.current(db, "tick") == {
        "owner": "b",
        "token": 2,
        "expires_at_ms": T0 + 1 + TTL,
        "acquired_at_ms": T0 + 1,
    }


def test_release_then_reacquire_by_the_same_owner_is_a_takeover(db):
    lease = leases.try_acquire(db, "tick", "a", TTL, T0)
    assert lease is not None
    leases.release(db, lease)
    again = leases.try_acquire(db, "tick", "a", TTL, T0 + 1)
    assert again is not None and again.token == 2
    with pytest.raises(LeaseLost):
        leases.check_fence(db, lease, T0 + 1)
    leases.check_fence(db, again, T0 + 1)


def test_check_fence_passes_for_the_current_holder(db):
    lease = leases.try_acquire(db, "tick", "a", TTL, T0)
    assert lease is not None
    with db.write():
        leases.check_fence(db, lease, T0 + TTL - 1)


def test_check_fence_names_the_new_holder_after_a_takeover(db, other):
    lease = leases.try_acquire(db, "tick", "host-a:1:aa", TTL, T0)
    assert lease is not None
    leases.try_acquire(other, "tick", "host-b:2:bb", TTL, T0 + TTL)
    with pytest.raises(LeaseLost, match=r"token 1 is no longer ours; now held by host-b:2:bb \(token 2\)"):
        leases.check_fence(db, lease, T0 + TTL)


@pytest.mark.parametrize("case", ["expired", "token changed", "owner changed", "released", "missing"])
def test_check_fence_refuses_a_stale_lease(db, case):
    lease = leases.try_acquire(db, "tick", "a", TTL, T0)
    assert lease is not None
    now = T0 + 1
    if case == "expired":
        now = T0 + TTL
    elif case == "token changed":
        db.execute("UPDATE leases SET token = 7")
    elif case == "owner changed":
        db.execute("UPDATE leases SET owner = 'b'")
    elif case == "released":
        leases.release(db, lease)
    elif case == "missing":
        db.execute("DELETE FROM leases")
    with pytest.raises(LeaseLost, match="lease 'tick' token 1 is no longer ours; now held by") as raised:
        leases.check_fence(db, lease, now)
    holder = (
        "nobody"
        if case == "missing"
        else "b (token 1)"
        if case == "owner changed"
        else "a (token 7)"
        if case == "token changed"
        else "a (token 1)"
    )
    assert f"now held by {holder}" in str(raised.value)


def test_a_stale_holder_cannot_commit_fenced_work(make_app, settings, clock):
    app = make_app([ledger], ["ledger"])
    now = clock.now_ms()
    stale = leases.try_acquire(app.db, "tick", "a", TTL, now)
    clock.advance(TTL)
    fresh = leases.try_acquire(app.db, "tick", "b", TTL, clock.now_ms())
    assert stale is not None and fresh is not None
    with app.db.write():
        queues.push_incoming(app.db, "ledger", [ledger.wire("deposit", "d1", "acct", 5)], now)
    with pytest.raises(LeaseLost):
        drain.process_next_incoming(app.runtime, stale)
    assert app.db.value("SELECT count(*) FROM incoming") == 1
    assert app.db.value("SELECT count(*) FROM events") == 0
    outcome = drain.process_next_incoming(app.runtime, fresh)
    assert outcome is not None and outcome.kind == "handled"
    assert app.db.value("SELECT count(*) FROM events") == 1


# --- state machine (c): owners racing for one lease on their own connections -----------

OWNERS = st.sampled_from(["a", "b", "c"])
TTLS = st.sampled_from([1, 50, 200])
STEPS = st.sampled_from([0, 1, 49, 50, 51, 200])


class LeaseMachine(RuleBasedStateMachine):
    """Acquire / renew / release / let time pass, compared with a one-row model."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="tessera-lease-")
        settings = Settings.load(env={}, busy_timeout_ms=2000)
        open_core_db(f"{self.dir}/db.sqlite", settings).close()
        self.dbs = {owner: Database(f"{self.dir}/db.sqlite", settings) for owner in "abc"}
        self.now = T0
        self.held: dict[str, leases.Lease] = {}  # each owner's latest lease object
        self.model: dict | None = None  # owner, token, expires
        self.max_token = 0

    def teardown(self) -> None:
        for db in self.dbs.values():
            db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def live(self) -> bool:
        return self.model is not None and self.model["expires"] > self.now

    # Each rule may also move the clock, so time passes whatever subset of
    # rules Hypothesis's swarm testing leaves enabled.

    @rule(owner=OWNERS, ttl=TTLS, then=STEPS)
    def acquire(self, owner, ttl, then):
        lease = leases.try_acquire(self.dbs[owner], "tick", owner, ttl, self.now)
        before = dict(self.model) if self.model else None
        if before is None:
            assert lease is not None and lease.token == 1
        elif self.live() and before["owner"] != owner:
            assert lease is None
        elif self.live():
            assert lease is not None and lease.token == before["token"]  # renewal: same token
        else:
            assert lease is not None and lease.token == before["token"] + 1  # takeover: exactly one more
        if lease is not None:
            assert (lease.owner, lease.expires_at_ms) == (owner, self.now + ttl)
            self.model = {"owner": owner, "token": lease.token, "expires": self.now + ttl}
            self.held[owner] = lease
        self.now += then

    @rule(owner=OWNERS, then=STEPS)
    def release(self, owner, then):
        lease = self.held.get(owner)
        if lease is None:
            return
        leases.release(self.dbs[owner], lease)
        if self.model and (self.model["owner"], self.model["token"]) == (owner, lease.token):
            self.model["expires"] = 0
        self.now += then

    @rule(ms=STEPS)
    def advance(self, ms):
        self.now += ms

    @invariant()
    def table_equals_model(self):
        row = self.dbs["a"].one("SELECT owner, token, expires_at_ms FROM leases WHERE name = 'tick'")
        expected = None if self.model is None else (self.model["owner"], self.model["token"], self.model["expires"])
        assert row == expected

    @invariant()
    def token_never_decreases(self):
        token = self.model["token"] if self.model else 0
        assert token >= self.max_token
        self.max_token = token

    @invariant()
    def only_the_current_unexpired_holder_passes_the_fence(self):
        passing = []
        for owner, lease in self.held.items():
            try:
                leases.check_fence(self.dbs[owner], lease, self.now)
            except LeaseLost:
                continue
            passing.append(owner)
        assert len(passing) <= 1
        if self.live():
            assert self.model is not None
            assert passing in ([self.model["owner"]], [])
            holder = self.held.get(self.model["owner"])
            assert holder is not None and passing == [self.model["owner"]] and holder.token == self.model["token"]
        else:
            assert passing == []


LeaseMachine.TestCase.settings = hsettings(
    max_examples=50, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_lease_state_machine = LeaseMachine.TestCase
