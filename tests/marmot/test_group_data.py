"""Marmot's group data extension (0xF2EE) and the admin rule it carries."""

from __future__ import annotations

import pytest

from protocols import mls
from protocols.marmot import group_data
from protocols.mls.codec import decode, encode
from tests.marmot._net import T0, Net
from tests.marmot._read import group_row, outer_record
from tests.marmot.conftest import deliver


def test_the_extension_round_trips_and_names_the_admins() -> None:
    net = Net(3)
    state = net.states[0]
    data = group_data.read(state)
    assert (data.version, data.nostr_group_id) == (group_data.VERSION, net.gid_bytes)
    assert group_data.admins(state) == {net.cred(0)}
    assert decode(group_data.GroupData, encode(data)) == data
    assert group_data.GROUP_DATA_TYPE in state.own_leaf_node.capabilities.extensions


def test_every_member_must_support_it_to_be_added() -> None:
    net = Net(2)
    outsider = mls.new_identity("ab" * 32)
    package, _ = mls.create_key_package(outsider)  # no 0xF2EE in its capabilities
    with pytest.raises(mls.InvalidMessage):
        mls.commit(net.states[0], add=[package])


def test_an_admin_change_is_a_commit_every_member_follows() -> None:
    net = Net(3)
    extensions = group_data.with_admins(net.states[0], {net.cred(0), net.cred(2)})
    net.adopt(0, mls.commit(net.states[0], extensions=extensions))
    assert all(group_data.admins(state) == {net.cred(0), net.cred(2)} for state in net.states.values())


def test_a_non_admin_may_commit_a_self_update() -> None:
    net = Net(3)
    result = mls.commit(net.states[1], self_update=True)
    applied = group_data.process_message(net.states[0], result.message)
    assert isinstance(applied, mls.CommitApplied) and group_data.is_pure_self_update(applied)


def test_a_non_admin_commit_that_changes_the_group_is_refused() -> None:
    net = Net(3)
    result = mls.commit(net.states[1], remove=[net.cred(2)])
    with pytest.raises(mls.UnauthorizedCommit, match="not an admin"):
        group_data.process_message(net.states[0], result.message)


def test_the_plugin_records_a_non_admin_commit_as_unauthorized(app, net) -> None:
    before = group_row(app, net.gid)
    line, _result = net.prepare(1, T0 + 1, remove=[net.cred(2)])
    deliver(app, line)
    record = outer_record(app, net.gid, line)
    assert (record.state, record.reason) == ("Failed", "unauthorized_commit")
    assert group_row(app, net.gid)["epoch"] == before["epoch"]
