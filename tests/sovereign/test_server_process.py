"""``tessera serve`` as a process: stopping on SIGTERM with the requests in flight finished, surviving SIGKILL
during a send storm with every acknowledged send stored once, and one-line errors for what a user gets wrong."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
from pathlib import Path

from protocols.libraries.delivery.client import Client, Disconnected
from tests.helpers import TESSERA, clean_environment, one_line_error, query_file
from tests.sovereign.server_helpers import (
    SERVE,
    Installation,
    ServerProcess,
    init_database,
    new_group_id,
    private_message,
    seat,
    write_config,
)

STORM = 3000


async def storm(client: Client, group_id: str, payloads: list[bytes], acknowledged: dict[bytes, str]) -> None:
    """Send ``payloads`` with eight in flight until the connection goes; record each acknowledged one."""
    window = asyncio.Semaphore(8)

    async def one(payload: bytes) -> None:
        async with window:
            with contextlib.suppress(Disconnected):
                acknowledged[payload] = (await client.send(group_id, payload)).message_id

    await asyncio.gather(*(one(payload) for payload in payloads))


async def started_storm(server: ServerProcess, sender: Installation, group_id: str, payloads: list[bytes]):
    client = await sender.connect(server.url)
    await seat(client, [], group_id)
    acknowledged: dict[bytes, str] = {}
    task = asyncio.create_task(storm(client, group_id, payloads, acknowledged))
    async with asyncio.timeout(30):
        while len(acknowledged) < 300:
            await asyncio.sleep(0.01)
    return client, acknowledged, task


def stored_payloads(db: Path) -> list[bytes]:
    """Each stored message's payload, in id order (from its stored fact in the log, which keeps it as its body)."""
    sql = "SELECT e.body FROM sovereign_messages AS m JOIN events AS e ON e.seq = m.seq ORDER BY m.id"
    return [bytes(row[0]) for row in query_file(str(db), sql)]


def test_sigterm_mid_storm_answers_every_request_it_took_then_closes_with_1001_and_exits_0(tmp_path) -> None:
    db = tmp_path / "store.db"
    init_database(db)
    group = new_group_id()
    payloads = [private_message(group) for _ in range(STORM)]

    async def scenario(server: ServerProcess) -> tuple[dict[bytes, str], int, int]:
        client, acknowledged, task = await started_storm(server, Installation(), group, payloads)
        server.proc.terminate()  # type: ignore[union-attr]
        await asyncio.wait_for(task, 30)
        closed = client.disconnected
        assert closed is not None
        return acknowledged, closed.code, await asyncio.to_thread(server.proc.wait, 30)  # type: ignore[union-attr]

    with ServerProcess(db) as server:
        acknowledged, close_code, exit_code = asyncio.run(scenario(server))
    assert (close_code, exit_code) == (1001, 0)
    assert len(acknowledged) < STORM  # it stopped mid-storm
    # every request it took was finished and answered: what is stored is exactly what was acknowledged
    assert sorted(stored_payloads(db)) == sorted(acknowledged)
    assert "Traceback" not in server.log.read_text()


def test_sigkill_mid_storm_loses_no_acknowledged_send_and_a_retry_after_restart_stores_nothing_twice(tmp_path) -> None:
    db = tmp_path / "store.db"
    init_database(db)
    group = new_group_id()
    sender = Installation()
    payloads = [private_message(group) for _ in range(STORM)]

    async def until_killed(server: ServerProcess) -> dict[bytes, str]:
        _, acknowledged, task = await started_storm(server, sender, group, payloads)
        server.kill()
        await asyncio.wait_for(task, 30)
        return dict(acknowledged)

    async def retry_the_rest(server: ServerProcess, acknowledged: dict[bytes, str]) -> list[bool]:
        client = await sender.connect(server.url)
        try:
            # a client that lost its connection sends again whatever it has no receipt for
            receipts = [await client.send(group, payload) for payload in payloads if payload not in acknowledged]
        finally:
            await client.close()
        return [receipt.duplicate for receipt in receipts]

    with ServerProcess(db) as server:
        acknowledged = asyncio.run(until_killed(server))
    assert 300 <= len(acknowledged) < STORM
    stored = dict(zip(stored_payloads(db), query_file(str(db), "SELECT id FROM sovereign_messages"), strict=True))
    assert {payload: row[0] for payload, row in stored.items() if payload in acknowledged} == acknowledged
    with ServerProcess(db) as server:
        duplicates = asyncio.run(retry_the_rest(server, acknowledged))
        assert server.stop() == 0
    # sends stored before the kill without their reply reaching the client are recognised, not stored again
    assert sum(duplicates) == len(stored) - len(acknowledged)
    everything = stored_payloads(db)
    assert sorted(everything) == sorted(payloads)  # each payload stored exactly once


# --- what a user gets wrong: one line, exit 1 -------------------------------------------------------------


def serve(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVE, "--db", str(db), *args], env=clean_environment(), capture_output=True, text=True, timeout=60
    )


def test_a_port_in_use_is_one_line(tmp_path) -> None:
    db = tmp_path / "store.db"
    init_database(db)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line_error(serve(db, "--port", str(port)))
    assert f"cannot listen on 127.0.0.1:{port}: the address is in use" in line


def test_a_bad_configuration_is_one_line(tmp_path) -> None:
    db = tmp_path / "store.db"
    init_database(db)
    config = write_config(tmp_path / "serve.toml", server={"send_queue_size": 5})
    assert "send_queue_size" in one_line_error(serve(db, "--config", str(config), "--port", "0"))
    tiny = write_config(tmp_path / "tiny.toml", server={"send_queue_bytes": 100_000})
    line = one_line_error(serve(db, "--config", str(tiny), "--port", "0"))
    assert "send_queue_bytes = 100000 would cut off healthy clients" in line and "raise it to at least" in line
    missing = tmp_path / "absent.toml"
    assert "absent.toml" in one_line_error(serve(db, "--config", str(missing), "--port", "0"))


def test_a_missing_database_or_one_without_the_plugin_is_one_line(tmp_path) -> None:
    assert "absent.db" in one_line_error(serve(tmp_path / "absent.db", "--port", "0"))
    assert not (tmp_path / "absent.db").exists()  # serve never creates a database
    other = tmp_path / "other.db"
    done = subprocess.run(
        [*TESSERA, "--db", str(other), "init", "--protocol", "example"], env=clean_environment(), capture_output=True
    )
    assert done.returncode == 0
    line = one_line_error(serve(other, "--port", "0"))
    assert "sovereign" in line and "init --protocol sovereign" in line
