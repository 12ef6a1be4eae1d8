"""The test kit must catch broken projectors and pass good ones."""

from __future__ import annotations

import pytest

from core.errors import InvalidInput
from projectors.testkit import (
    Blob,
    Item,
    ProjectorContractError,
    ProjectorKit,
    Run,
    check_deterministic,
    check_idempotent,
    check_partition_independent,
)
from tests.fixtures import bad_projectors, ledger

ITEMS: list[Item] = [
    Run("ledger.deposit", {"id": "d1", "account": "alice", "amount": 5}),
    Blob("ledger", ledger.wire("deposit", "w1", "bob", 3)),
    Blob("ledger", ledger.wire("needs", "n1", "carol", 2)),  # blocked until carol exists
    Run("ledger.deposit", {"id": "d2", "account": "carol", "amount": 1}),
    Run("ledger.transfer", {"id": "t1", "from": "alice", "to": "bob", "amount": 2}),
    Blob("ledger", ledger.wire("deposit", "w2", "alice", 4)),
]


def kit_for(tmp_path, plugin):
    return ProjectorKit([plugin], ["ledger"], tmp_path)


def test_good_projector_passes_every_check(tmp_path):
    kit = kit_for(tmp_path, ledger)
    check_idempotent(kit, ITEMS)
    check_deterministic(kit, ITEMS)
    check_partition_independent(kit, ITEMS)


def test_catches_a_non_idempotent_projector(tmp_path):
    kit = kit_for(tmp_path, bad_projectors.plugin_with(bad_projectors.counts_blindly))
    with pytest.raises(ProjectorContractError, match="not idempotent") as caught:
        check_idempotent(kit, ITEMS)
    message = str(caught.value)
    assert "table ledger_accounts" in message
    assert "first row only in expected" in message and "alice" in message


def test_catches_a_wall_clock_projector(tmp_path):
    kit = kit_for(tmp_path, bad_projectors.plugin_with(bad_projectors.stamps_wall_clock))
    with pytest.raises(ProjectorContractError, match="did not reproduce the live tables") as caught:
        check_deterministic(kit, ITEMS)
    assert "table ledger_entries" in str(caught.value)


def test_catches_sql_clock_functions(tmp_path):
    kit = kit_for(tmp_path, bad_projectors.plugin_with(bad_projectors.stamps_sql_clock))
    with pytest.raises(ProjectorContractError, match=r"calls SQL unixepoch\(\), which reads the clock"):
        check_deterministic(kit, ITEMS)


def test_catches_cross_partition_dependence(tmp_path):
    kit = kit_for(tmp_path, bad_projectors.plugin_with(bad_projectors.counts_across_partitions))
    with pytest.raises(ProjectorContractError, match="another order changed the tables"):
        check_partition_independent(kit, ITEMS)


def test_catches_a_false_order_independence_claim(tmp_path):
    # ledger.balances keeps last_seq, so shuffled events within a partition change it.
    kit = kit_for(tmp_path, bad_projectors.plugin_with(ledger._project_deposit, order_independent=True))
    items = ITEMS + [Run("ledger.deposit", {"id": f"x{n}", "account": "alice", "amount": n}) for n in range(1, 9)]
    with pytest.raises(ProjectorContractError, match="ledger.bad, declared order_independent"):
        check_partition_independent(kit, items)


def test_kit_fixture_is_available(make_projector_kit):
    kit = make_projector_kit([ledger], ["ledger"])
    app = kit.run(ITEMS[:2])
    assert kit.owned_tables(app) == ["ledger_accounts", "ledger_entries"]


def test_catches_a_false_order_independence_claim_beside_other_plugins(tmp_path):
    """Another enabled plugin whose projectors keep arrival order must not switch the shuffle off."""
    import protocols.example

    bad = bad_projectors.plugin_with(ledger._project_deposit, order_independent=True)
    kit = ProjectorKit([bad, protocols.example], ["ledger", "example"], tmp_path)
    assert not any(p.order_independent for p in kit.projectors(kit.open("probe")) if p.protocol == "example")
    items = ITEMS + [Run("ledger.deposit", {"id": f"x{n}", "account": "alice", "amount": n}) for n in range(1, 9)]
    with pytest.raises(ProjectorContractError, match="ledger.bad, declared order_independent"):
        check_partition_independent(kit, items)


def test_shuffling_a_projector_that_keeps_arrival_order_is_refused(tmp_path):
    kit = kit_for(tmp_path, ledger)
    app = kit.run(ITEMS[:2])
    with pytest.raises(InvalidInput, match="cannot shuffle the events of ledger.balances: not declared order_indep"):
        kit.replay(app, shuffle_seed=1)


def test_a_true_order_independence_claim_passes_beside_other_plugins(tmp_path):
    import protocols.example

    # Recording entries alone commutes: one row per event, keyed by the event, whatever the arrival order.
    good = bad_projectors.plugin_with(ledger.record_entry, order_independent=True)
    kit = ProjectorKit([good, protocols.example], ["ledger", "example"], tmp_path)
    # Deposits only: without the balances projector, transfers and blocked items would not resolve.
    deposits = [Run("ledger.deposit", {"id": f"d{n}", "account": f"a{n % 3}", "amount": n}) for n in range(1, 12)]
    check_partition_independent(kit, deposits)
