"""``tessera xmtp leave`` between two Tessera members on the node profile: every step the real CLI (in process) on
encrypted databases, against a real ``tessera serve --xmtp-port`` process.  A leave libxmtp refuses is refused
with one line before anything is recorded; a leave is a request the group's super admin answers by removing us
(here the other member's ``tessera tick``), after which the group is inactive and says why."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.helpers import clean_environment, invoke, one_line_error
from tests.xmtp_node.node_process import NodeProcess, new_node


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    with new_node(tmp_path_factory.mktemp("node")) as started:
        yield started


def tessera(db: Path, *args: str) -> Result:
    return invoke("--db", str(db), *args, env=clean_environment())


def done(db: Path, *args: str) -> Any:
    """``tessera xmtp args --json``, which must succeed; its JSON answer."""
    ran = tessera(db, "xmtp", *args, "--json")
    assert ran.exit_code == 0, (ran.stdout, ran.stderr)
    return json.loads(ran.stdout)


def member(db: Path, url: str) -> dict[str, Any]:
    assert tessera(db, "init", "--protocol", "xmtp").exit_code == 0
    made: dict[str, Any] = done(db, "identity", "new", "--node", url)
    return made


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

    ran = tessera(admin_db, "xmtp", "leave", "--group", group)
    assert ran.exit_code == 1, (ran.stdout, ran.stderr)
    assert "a super admin cannot leave" in one_line_error(ran)
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
    ran = tessera(leaver_db, "xmtp", "leave", "--group", group)
    assert ran.exit_code == 1 and "read-only" in one_line_error(ran)
