"""Leave requests answered by a super admin's tick (:mod:`protocols.xmtp.node_profile.leaving`), with Tessera members
alone on a real ``tessera serve --xmtp-port`` node: requests read by a sync whose process then stopped before its
worker ran are kept with the group's state, and the next process removes both members by one intent, once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from protocols import xmtp
from protocols.xmtp.node_profile import leaving
from tests.xmtp.node_member import NodeMember
from tests.xmtp_node.node_process import NodeProcess


def test_requests_read_before_the_worker_ran_are_removed_once_by_the_next_process(
    node: NodeProcess, make_app: Any, tmp_path: Path
) -> None:
    admin_db = str(tmp_path / "admin.db")
    admin = NodeMember.create(make_app([xmtp], ["xmtp"], path=admin_db), node.url)
    bob, carol = (NodeMember.create(make_app([xmtp], ["xmtp"]), node.url) for _ in range(2))
    group = admin.create_group("leavers")
    admin.add_members(group, bob.address, carol.address)
    admin.tick()
    admin.tick()  # the welcomes leave once the add is read back
    for member in (bob, carol):
        member.tick()
        member.accept(group)
        member.tick()
        member.leave(group)
        member.tick()  # the request published and read back
    admin.sync()  # both requests read and kept; this process stops before its tick's worker runs

    restarted = NodeMember(make_app([xmtp], ["xmtp"], path=admin_db))
    assert len(leaving.remove_all(restarted.app.runtime)) == 1
    assert leaving.remove_all(restarted.app.runtime) == []  # one open already: no second
    restarted.tick()  # published, read back
    assert restarted.intents_of("REMOVE_MEMBERS") == [("COMMITTED", "")]
    assert restarted.members(group) == [restarted.inbox_id]
    assert leaving.remove_all(restarted.app.runtime) == []  # the removed are no longer kept
    for member in (bob, carol):
        member.tick()
        row = member.group_row(group)
        assert row is not None and not row.active
        assert row.removed_reason == f"removed by {admin.inbox_id} after our leave request"
