"""Real libxmtp clients through ``tessera serve --xmtp-port``: the scenarios of test_ceiling_with_libxmtp.py
against the node on the store (an encrypted database, its own process), and what only a durable node can do:
survive a restart and a SIGKILL between steps, and bring a client that was away up to date.

Every client is libxmtp v1.10.0 in its own process (tests/xmtp_node/libxmtp_peer.py).  What the clients agree
on here they worked out from what the node stored and served; the tables are read raw where the test says
what the node must hold.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers import TESSERA, clean_environment
from tests.xmtp_node.libxmtp_peer import LibxmtpClient, LibxmtpError
from tests.xmtp_node.node_process import NodeProcess

pytestmark = pytest.mark.peer

# libxmtp refreshes a group's installations before a send at most this often (SEND_MESSAGE_UPDATE_INSTALLATIONS_INTERVAL_NS).
INSTALLATION_CHECK_INTERVAL_S = 5.0

Clients = Callable[[str], LibxmtpClient]


def registered(libxmtp_client: Clients, node: NodeProcess, *names: str) -> list[LibxmtpClient]:
    return [libxmtp_client(name).create(node.url) for name in names]


def test_three_inboxes_build_a_group_change_it_talk_both_ways_and_open_a_dm(
    libxmtp_client: Clients, xmtp_node: NodeProcess
) -> None:
    alice, bob, carol = registered(libxmtp_client, xmtp_node, "alice", "bob", "carol")
    assert alice.call("inbox_id_for", address=bob.address) == bob.inbox_id
    assert alice.call("inbox_id_for", address="0x" + "11" * 20) is None

    group = alice.create_group([bob], name="three")
    alice.call("add_members", group_id=group, inbox_ids=[carol.inbox_id])
    alice.send_text(group, "from alice")
    for member in (bob, carol):
        member.call("sync_welcomes")
        member.call("sync_group", group_id=group)
    carol.send_text(group, "from carol")
    bob.send_text(group, "from bob")
    alice.call("set_group_name", group_id=group, name="renamed")
    alice.call("remove_members", group_id=group, inbox_ids=[carol.inbox_id])
    alice.send_text(group, "after carol left")
    for member in (alice, bob, carol):
        member.call("sync_group", group_id=group)

    said = [(alice.inbox_id, "from alice"), (carol.inbox_id, "from carol"), (bob.inbox_id, "from bob")]
    assert alice.texts(group) == bob.texts(group) == [*said, (alice.inbox_id, "after carol left")]
    assert carol.texts(group) == said
    assert carol.call("is_active", group_id=group) is False
    assert bob.call("group_name", group_id=group) == "renamed"
    assert bob.call("members", group_id=group) == sorted([alice.inbox_id, bob.inbox_id])

    dm = bob.create_dm(carol)
    bob.send_text(dm, "hi carol")
    carol.call("sync_welcomes")
    carol.call("sync_group", group_id=dm)
    carol.send_text(dm, "hi bob")
    bob.call("sync_group", group_id=dm)
    assert bob.texts(dm) == carol.texts(dm) == [(bob.inbox_id, "hi carol"), (carol.inbox_id, "hi bob")]

    # what the node holds: one identity update per inbox, one key package per installation, and the group's
    # messages in server order with its commits read as commits
    assert sorted(xmtp_node.rows("SELECT inbox_id, count(*) FROM sovereign_xmtp_identity_updates GROUP BY 1")) == (
        sorted((client.inbox_id, 1) for client in (alice, bob, carol))
    )
    assert {
        bytes(row[0]).hex() for row in xmtp_node.rows("SELECT installation_key FROM sovereign_xmtp_key_packages")
    } >= {client.installation_id for client in (alice, bob, carol)}
    stored = xmtp_node.rows(
        f"SELECT id, is_commit FROM sovereign_xmtp_group_messages WHERE group_id = x'{group}' ORDER BY id"
    )
    assert sum(is_commit for _, is_commit in stored) >= 4  # creation, addition, rename, removal
    assert len(stored) - sum(is_commit for _, is_commit in stored) >= 4


def test_a_stream_delivers_a_new_group_and_its_messages_as_they_are_sent(
    libxmtp_client: Clients, xmtp_node: NodeProcess
) -> None:
    alice, bob = registered(libxmtp_client, xmtp_node, "alice", "bob")
    bob.call("stream_all")  # opened before the group exists: the welcome arrives on the stream too
    group = alice.create_group([bob])
    for number in range(3):
        alice.send_text(group, f"live {number}")

    assert bob.streamed_texts(3) == ["live 0", "live 1", "live 2"]
    _, _, metrics = xmtp_node.http("/metrics")
    assert 'tessera_xmtp_requests_total{code="OK",method="SendGroupMessages"}' in metrics
    assert "tessera_xmtp_open_streams 2.0" in metrics or "tessera_xmtp_open_streams 1.0" in metrics


def test_more_than_two_invitees_get_welcome_pointers_and_still_join(
    libxmtp_client: Clients, xmtp_node: NodeProcess
) -> None:
    alice, bob, carol, dave = registered(libxmtp_client, xmtp_node, "alice", "bob", "carol", "dave")
    group = alice.create_group([bob, carol, dave])
    alice.send_text(group, "welcome, all")

    pointers = xmtp_node.rows("SELECT installation_key FROM sovereign_xmtp_welcomes WHERE kind = 1")
    assert sorted(bytes(row[0]).hex() for row in pointers) == sorted(m.installation_id for m in (bob, carol, dave))
    for member in (bob, carol, dave):
        member.call("sync_welcomes")
        member.call("sync_group", group_id=group)
        assert member.texts(group) == [(alice.inbox_id, "welcome, all")]


def test_a_new_installation_of_a_member_joins_when_another_member_next_sends(
    libxmtp_client: Clients, xmtp_node: NodeProcess
) -> None:
    alice, bob = registered(libxmtp_client, xmtp_node, "alice", "bob")
    group = alice.create_group([bob])
    alice.send_text(group, "before the new installation")
    bob_again = libxmtp_client("bob-again").create(xmtp_node.url, private_key=bob.private_key)
    assert bob_again.inbox_id == bob.inbox_id
    assert sorted(alice.call("installations", inbox_id=bob.inbox_id)) == sorted(
        [bob.installation_id, bob_again.installation_id]
    )
    time.sleep(INSTALLATION_CHECK_INTERVAL_S + 0.5)
    alice.send_text(group, "after")
    bob_again.call("sync_welcomes")
    bob_again.call("sync_group", group_id=group)

    assert bob_again.texts(group) == [(alice.inbox_id, "after")]
    numbered = xmtp_node.rows(
        f"SELECT sequence_id FROM sovereign_xmtp_identity_updates WHERE inbox_id = '{bob.inbox_id}' ORDER BY 1"
    )
    assert len(numbered) == 2  # node-wide sequence ids: the two of bob's inbox, in order


def test_restart_and_sigkill_between_steps_lose_nothing_acknowledged_and_clients_converge(
    libxmtp_client: Clients, xmtp_node: NodeProcess
) -> None:
    alice, bob = registered(libxmtp_client, xmtp_node, "alice", "bob")
    group = alice.create_group([bob])
    alice.send_text(group, "before the restart")
    xmtp_node.restart()
    bob.call("sync_welcomes")
    bob.call("sync_group", group_id=group)
    bob.send_text(group, "after the restart")
    alice.send_text(group, "before the kill")
    xmtp_node.killed_and_restarted()
    alice.send_text(group, "after the kill")
    for member in (alice, bob):
        member.call("sync_group", group_id=group)

    expected = ["before the restart", "after the restart", "before the kill", "after the kill"]
    assert [text for _, text in alice.texts(group)] == expected
    assert [text for _, text in bob.texts(group)] == expected
    ids = [row[0] for row in xmtp_node.rows("SELECT id FROM sovereign_xmtp_group_messages ORDER BY id")]
    assert ids == list(range(1, len(ids) + 1))  # server order survived both: no id given twice or skipped

    # the tables are projections of the facts: a rebuild from the log makes the same rows
    assert xmtp_node.stop() == 0
    workdir = xmtp_node.db.parent / "rebuild"
    rebuilt = subprocess.run(
        [*TESSERA, "--db", str(xmtp_node.db), "rebuild", "--engine", "local", "--workdir", str(workdir), "--verify"],
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rebuilt.returncode == 0 and "rebuilt == live" in rebuilt.stdout, rebuilt.stdout + rebuilt.stderr


def catch_up(libxmtp_client: Clients, node: NodeProcess, count: int) -> None:
    alice, bob = registered(libxmtp_client, node, "alice", "bob")
    group = alice.create_group([bob])
    bob.call("sync_welcomes")
    bob.call("sync_group", group_id=group)
    for number in range(count):  # bob is away all along
        alice.send_text(group, f"m{number}")
    bob.call("sync_group", group_id=group)
    assert [text for _, text in bob.texts(group)] == [f"m{number}" for number in range(count)]


def test_a_client_away_for_500_messages_catches_up_in_one_sync(libxmtp_client: Clients, xmtp_node: NodeProcess) -> None:
    catch_up(libxmtp_client, xmtp_node, 500)


@pytest.mark.slow
def test_a_client_away_for_3000_messages_catches_up_in_one_sync(
    libxmtp_client: Clients, xmtp_node: NodeProcess
) -> None:
    catch_up(libxmtp_client, xmtp_node, 3000)


def many_sending_at_once(libxmtp_client: Clients, node: NodeProcess, clients: int, texts: int) -> None:
    members = registered(libxmtp_client, node, *[f"member-{n}" for n in range(clients)])
    group = members[0].create_group(members[1:])
    for member in members[1:]:
        member.call("sync_welcomes")
        member.call("sync_group", group_id=group)

    def send_all(member: LibxmtpClient) -> list[str]:
        sent = []
        for number in range(texts):
            text = f"{member.name} {number}"
            # A send that lost a commit race three times fails, but its text stays queued in the client and goes
            # out on its next sync: the texts every member must end up with are all of them.
            with contextlib.suppress(LibxmtpError):
                member.send_text(group, text)
            sent.append(text)
        return sent

    with ThreadPoolExecutor(max_workers=clients) as pool:
        everything = {text for sent in pool.map(send_all, members) for text in sent}
    for _ in range(2):  # the first sync publishes what waited; the second reads what the others published
        for member in members:
            member.call("sync_group", group_id=group)

    seen = [member.texts(group) for member in members]
    assert all(each == seen[0] for each in seen)  # one order: the node's
    assert {text for _, text in seen[0]} == everything


def test_four_clients_sending_at_once_see_every_text_in_one_order(
    libxmtp_client: Clients, xmtp_node: NodeProcess
) -> None:
    many_sending_at_once(libxmtp_client, xmtp_node, 4, 10)


@pytest.mark.slow
def test_eight_clients_sending_at_once_see_every_text_in_one_order(
    libxmtp_client: Clients, xmtp_node: NodeProcess
) -> None:
    many_sending_at_once(libxmtp_client, xmtp_node, 8, 50)
