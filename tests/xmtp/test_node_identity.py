"""``tessera xmtp identity new --node`` and ``identity add-installation``: an inbox libxmtp can find.

Every step is the real CLI on an encrypted database, against a real ``tessera
serve --xmtp-port`` process (which verifies every identity update and
KeyPackage it stores, as XMTP's own nodes do); the ``peer`` test has a real
libxmtp client find the inbox by address and add it to a group, which it does
only with a KeyPackage it accepts.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from protocols.libraries.xmtp_identity import apply_identity_update
from protocols.xmtp.transport.node import NodeService
from tests.helpers import TESSERA, clean_environment, query_file
from tests.xmtp_node.conftest import libxmtp_client, libxmtp_python  # noqa: F401
from tests.xmtp_node.libxmtp_peer import LibxmtpClient
from tests.xmtp_node.node_process import NodeProcess

ACCOUNT_KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"


@pytest.fixture
def env() -> dict[str, str]:
    return clean_environment()


def database(folder: Path, env: dict[str, str], name: str = "me") -> Path:
    db = folder / f"{name}.db"
    subprocess.run([*TESSERA, "--db", str(db), "init", "--protocol", "xmtp"], check=True, env=env, capture_output=True)
    return db


def run(db: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TESSERA, "--db", str(db), "xmtp", *args], capture_output=True, text=True)


def whoami(db: Path, env: dict[str, str]) -> dict[str, Any]:
    done = run(db, env, "whoami", "--json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def installations_on(node: NodeProcess, inbox_id: str) -> set[str]:
    service = NodeService(node.url)
    try:
        state = None
        for entry in service.identity_updates([inbox_id])[inbox_id]:
            state = apply_identity_update(state, entry.update, sequence_id=entry.sequence_id)
    finally:
        service.close()
    assert state is not None
    return {key.hex() for key in state.installation_keys}


def test_a_new_inbox_is_on_the_node_with_its_installation_and_whoami_shows_it(
    node: NodeProcess, env: dict[str, str], tmp_path: Path
) -> None:
    db = database(tmp_path, env)
    made = run(db, env, "identity", "new", "--node", node.url)
    assert made.returncode == 0, made.stderr
    me = whoami(db, env)

    assert made.stdout.splitlines() == [
        f"address {me['address']}",
        f"inbox {me['inbox_id']}",
        f"installation {me['installation']}",
        f"registered with {node.url}: 1 KeyPackage uploaded",
    ]
    assert me["node"] == node.url and me["key_packages"] == 1
    service = NodeService(node.url)
    assert service.inbox_id_for(me["address"]) == me["inbox_id"]
    service.close()
    assert installations_on(node, me["inbox_id"]) == {me["installation"]}
    kept = query_file(str(db), "SELECT inbox_id, sequence_id FROM xmtp_identity_updates")
    [(inbox_id, sequence_id)] = [tuple(row) for row in kept]
    assert inbox_id == me["inbox_id"] and sequence_id >= 1  # the node's numbers are node-wide
    uploaded = node.rows("SELECT lower(hex(installation_key)), inbox_id FROM sovereign_xmtp_key_packages")
    assert (me["installation"], me["inbox_id"]) in uploaded


def test_a_second_installation_of_the_inbox_joins_it_and_both_are_listed(
    node: NodeProcess, env: dict[str, str], tmp_path: Path
) -> None:
    first, second = database(tmp_path, env, "first"), database(tmp_path, env, "second")
    assert run(first, env, "identity", "new", "--node", node.url, "--account-key", ACCOUNT_KEY).returncode == 0

    again = run(second, env, "identity", "new", "--node", node.url, "--account-key", ACCOUNT_KEY)
    assert again.returncode != 0 and "identity add-installation" in again.stderr
    joined = run(second, env, "identity", "add-installation", "--node", node.url, "--account-key", ACCOUNT_KEY)
    assert joined.returncode == 0, joined.stderr

    one, two = whoami(first, env), whoami(second, env)
    assert one["inbox_id"] == two["inbox_id"] and one["address"] == two["address"]
    assert installations_on(node, one["inbox_id"]) == {one["installation"], two["installation"]}
    kept = query_file(str(second), "SELECT sequence_id FROM xmtp_identity_updates ORDER BY 1")
    numbers = [row[0] for row in kept]
    assert len(numbers) == 2 and numbers[0] < numbers[1]


def test_node_profile_mistakes_are_one_line_and_a_node_that_is_down_exits_4(
    node: NodeProcess, env: dict[str, str], tmp_path: Path
) -> None:
    blank = database(tmp_path, env, "blank")
    for args, says in [
        (("identity", "new", "--node", "ws://127.0.0.1:8765"), "http://HOST:PORT"),
        (("identity", "new", "--node", node.url, "--account-key", "zz"), "64 hex digits"),
        (("identity", "add-installation", "--node", node.url, "--account-key", "11" * 32), "has no inbox"),
    ]:
        done = run(blank, env, *args)
        assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1 and says in done.stderr, done
    assert "identity new" in run(blank, env, "whoami").stderr

    down = run(blank, env, "identity", "new", "--node", "http://127.0.0.1:9")  # the discard port: nobody listens
    assert down.returncode == 4 and "registers on the next" in down.stderr, down
    assert whoami(blank, env)["node"] == "http://127.0.0.1:9"
    unreachable = run(blank, env, "sync", "--json")
    assert unreachable.returncode == 4 and json.loads(unreachable.stdout)["outcome"] == "unreachable", unreachable
    made = run(blank, env, "create-group", "--name", "offline", "--permissions", "admin-only")
    assert made.returncode == 0 and len(made.stdout.strip()) == 32, made  # a libxmtp group needs no node yet
    queued = run(blank, env, "add-members", "--group", made.stdout.strip()[:8], "0x" + "11" * 20)
    assert queued.returncode == 5 and "queued" in queued.stderr, queued  # the node is asked when it is built
    # listen on a node that is down waits for it, saying so, and still stops cleanly on SIGTERM.
    listening = subprocess.Popen(
        [*TESSERA, "--db", str(blank), "xmtp", "listen"], env=env, stderr=subprocess.PIPE, text=True
    )
    assert listening.stderr is not None
    said = [listening.stderr.readline() for _ in range(2)]
    listening.send_signal(signal.SIGTERM)
    assert listening.wait(30) == 0, said
    assert said[0].startswith("listening on http://127.0.0.1:9") and "lost the node" in said[1], said


def test_a_private_profile_database_is_told_it_cannot_speak_xmtp(env: dict[str, str], tmp_path: Path) -> None:
    old = database(tmp_path, env, "old")
    run(old, env, "identity", "new", "--server", "ws://127.0.0.1:9")
    group = run(old, env, "create-group", "--name", "ours").stdout.strip()
    for args in [
        ("identity", "new", "--node", "http://127.0.0.1:9"),
        ("identity", "add-installation", "--node", "http://127.0.0.1:9", "--account-key", "11" * 32),
        ("rename", "--group", group, "libxmtp's"),
        ("set-permission", "--group", group, "add_member", "admin"),
        ("add-admin", "--group", group, "0x" + "11" * 20),
        ("leave", "--group", group),
    ]:
        done = run(old, env, *args)
        assert done.returncode == 1 and "private profile" in done.stderr and "new database" in done.stderr, done


@pytest.mark.peer
def test_libxmtp_finds_the_inbox_by_address_and_adds_it_to_a_group(
    node: NodeProcess,
    env: dict[str, str],
    tmp_path: Path,
    libxmtp_client: Callable[[str], LibxmtpClient],  # noqa: F811
) -> None:
    db = database(tmp_path, env)
    assert run(db, env, "identity", "new", "--node", node.url).returncode == 0
    me = whoami(db, env)
    alice = libxmtp_client("alice").create(node.url)

    assert alice.call("inbox_id_for", address=me["address"].lower()) == me["inbox_id"]
    assert alice.call("installations", inbox_id=me["inbox_id"]) == [me["installation"]]
    group = alice.call("create_group", members=[me["inbox_id"]], name="lunch")  # fetches and checks our KeyPackage
    assert me["inbox_id"] in alice.call("members", group_id=group)
