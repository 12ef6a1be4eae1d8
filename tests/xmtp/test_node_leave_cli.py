"""``tessera xmtp leave`` between two Tessera members on the node profile: every step the real CLI (in process) on
encrypted databases, against a real ``tessera serve --xmtp-port`` process.  A leave libxmtp refuses is refused
with one line before anything is recorded; a leave is a request the group's super admin answers by removing us
(here the other member's ``tessera tick``), after which the group is inactive and says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.xmtp.node_cli import done, member, refused, tessera
from tests.xmtp_node.node_process import NodeProcess


def listed(db: Path, group: str) -> dict[str, Any]:
    found: dict[str, Any] = next(g for g in done(db, "groups") if g["group"] == group)
    return found


def test_a_leave_is_refused_to_a_super_admin_then_answered_by_the_super_admins_tick(
    node: NodeProcess, tmp_path: Path
) -> None:
    admin_db, leaver_db = tmp_path / "admin.db", tmp_path / "leaver.db"
    admin, leaver = member(admin_db, node.url), member(leaver_db, node.url)
    group = done(admin_db, "create-group", "--name", "lunch")["group"]
    done(admin_db, "add-members", "--group", group, leaver["address"])
    done(admin_db, "sync")  # the welcome goes out once the add is read back

    assert "a super admin cannot leave" in refused(admin_db, "leave", "--group", group)
    assert [i["kind"] for i in done(admin_db, "intents")] == ["ADD_MEMBERS"]  # nothing recorded

    done(leaver_db, "sync")
    tessera(leaver_db, "xmtp", "accept", group[:8])
    asked = done(leaver_db, "leave", "--group", group[:8])
    assert [(i["kind"], i["state"]) for i in asked["intents"]] == [("SEND_MESSAGE", "COMMITTED")]
    standing = listed(leaver_db, group)
    assert standing["active"] and standing["leave_requested"] and standing["removed_reason"] is None
    assert "(asked to leave)" in tessera(leaver_db, "xmtp", "groups").stdout

    assert tessera(admin_db, "tick", "--once").exit_code == 0  # reads the request: the removal recorded
    done(admin_db, "sync")  # published and read back
    kinds = [(i["kind"], i["state"]) for i in done(admin_db, "intents")]
    assert kinds == [("ADD_MEMBERS", "COMMITTED"), ("REMOVE_MEMBERS", "COMMITTED")], kinds
    assert done(admin_db, "members", "--group", group)["members"] == [admin["inbox_id"]]

    tessera(leaver_db, "xmtp", "sync")
    standing = listed(leaver_db, group)
    assert not standing["active"]
    assert standing["removed_reason"] == f"removed by {admin['inbox_id']} after our leave request"
    assert f"(removed by {admin['inbox_id']} after our leave request)" in tessera(leaver_db, "xmtp", "groups").stdout
    assert "read-only" in refused(leaver_db, "leave", "--group", group)
