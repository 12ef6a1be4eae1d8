"""``tessera xmtp rename``, ``set-description``, ``add-admin``/``remove-admin``, ``set-permission`` and
``create-group --permissions custom``: every step the real CLI (in process) on an encrypted database, against a real
``tessera serve --xmtp-port`` process.  A change is an intent committed through the node; a change the
group's permissions forbid, or a value libxmtp would reject, is refused with one line and a non-zero exit
before anything is recorded."""

from __future__ import annotations

from pathlib import Path

from tests.xmtp.node_cli import done, member, refused, tessera
from tests.xmtp_node.node_process import NodeProcess


def test_changes_commit_through_the_node_and_forbidden_ones_are_refused_before_recording(
    node: NodeProcess, tmp_path: Path
) -> None:
    db = tmp_path / "me.db"
    me = member(db, node.url)
    made = done(
        db, "create-group", "--name", "first", "--permissions", "custom", "--policy", "update_group_name=super_admin"
    )
    group = made["group"]

    renamed = done(db, "rename", "--group", group[:8], "lunch")
    assert [(i["kind"], i["state"]) for i in renamed["intents"]] == [("METADATA_UPDATE", "COMMITTED")]
    done(db, "set-description", "--group", group, "where we eat")
    policy = done(db, "set-permission", "--group", group, "add_member", "admin")
    assert [(i["kind"], i["state"]) for i in policy["intents"]] == [("PERMISSION_UPDATE", "COMMITTED")]
    members = done(db, "members", "--group", group)
    assert (members["name"], members["description"], members["super_admins"]) == (
        "lunch",
        "where we eat",
        [me["inbox_id"]],
    )
    recorded = done(db, "intents")

    why = refused(db, "remove-admin", "--group", group, me["address"], "--super")
    assert "keeps at least one super admin" in why
    why = refused(db, "set-permission", "--group", group, "add_admin", "allow")
    assert "add_admin cannot be 'allow'" in why
    why = refused(db, "set-permission", "--group", group, "update_everything", "admin")
    assert "no policy 'update_everything'" in why and "update_group_name" in why
    why = refused(db, "rename", "--group", group, "lunch")
    assert "nothing to change" in why
    assert done(db, "intents") == recorded  # nothing recorded by any refusal

    why = refused(db, "create-group", "--permissions", "custom", "--policy", "add_member")
    assert "NAME=VALUE" in why
    unknown = tessera(db, "xmtp", "add-admin", "--group", group, "0x" + "ab" * 20)
    assert unknown.exit_code != 0 and "has no XMTP inbox" in unknown.stderr
    assert len(done(db, "groups")) == 1  # the refused create-group made no group
