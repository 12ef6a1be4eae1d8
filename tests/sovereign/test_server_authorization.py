"""Authorization in ``tessera serve``: a connection acts only as the installation it proved, reads only its
groups, is pushed only its own deliveries, and cannot ack, read or publish anything of another's."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator

import pytest

from protocols.libraries.delivery.client import Client, ServerError
from protocols.libraries.delivery.codes import ErrorCode
from protocols.libraries.delivery.records import PENDING
from tests.helpers import query_file
from tests.sovereign.server_helpers import (
    Installation,
    RawClient,
    ServerProcess,
    new_group_id,
    private_message,
    seat,
    serving,
    welcome,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with serving(tmp_path_factory.mktemp("authorization")) as running:
        yield running


def delivery_status(server: ServerProcess, message_id: str, recipient: str) -> int:
    rows = query_file(
        str(server.db),
        "SELECT status FROM sovereign_delivery_status WHERE message_id = ? AND recipient_id = ?",
        (message_id, recipient),
    )
    return int(rows[0][0])


async def error_code(request: object) -> str:
    assert asyncio.iscoroutine(request)
    with pytest.raises(ServerError) as refused:
        await request
    return refused.value.code


def run_with(server: ServerProcess, count: int, scenario) -> None:
    """Run ``scenario(installations, clients)`` with ``count`` connected installations."""

    async def main() -> None:
        installations = [Installation() for _ in range(count)]
        clients: list[Client] = [await each.connect(server.url) for each in installations]
        try:
            await scenario(installations, clients)
        finally:
            for client in clients:
                await client.close()

    asyncio.run(main())


def test_history_of_a_group_is_read_only_by_its_members(server) -> None:
    group = new_group_id()

    async def scenario(who, clients) -> None:
        alice, bob, mallory = clients
        await seat(alice, [bob], group)
        await alice.send(group, private_message(group))
        assert len((await bob.history(group)).messages) == 2  # the welcome and the message
        assert await error_code(mallory.history(group)) == ErrorCode.NOT_A_MEMBER
        assert await error_code(mallory.history(group, direction="forward")) == ErrorCode.NOT_A_MEMBER
        assert await error_code(mallory.send(group, private_message(group))) == ErrorCode.NOT_A_MEMBER
        assert await error_code(mallory.join(group)) == ErrorCode.NO_WELCOME  # knowing the id is not enough

    run_with(server, 3, scenario)


def test_acking_or_reading_another_installations_deliveries_changes_nothing(server) -> None:
    group = new_group_id()

    async def scenario(who, clients) -> None:
        alice, bob, carol = clients
        await seat(alice, [bob, carol], group)
        receipt = await alice.send(group, private_message(group))
        pushed_to_bob = await bob.receive(timeout=10)
        assert pushed_to_bob.id == receipt.message_id
        # carol got the same message, but her ack touches only her own delivery row
        assert (await carol.receive(timeout=10)).id == receipt.message_id
        assert await carol.ack([receipt.message_id]) == 1
        assert await alice.ack([receipt.message_id]) == 0  # the sender has no delivery of its own message
        assert await alice.read([receipt.message_id]) == 0
        assert delivery_status(server, receipt.message_id, who[1].id) == PENDING
        # so bob still has it pending, and gets it again on his next connection
        again = await asyncio.wait_for(_pending_once(who[1], server), 10)
        assert again == [receipt.message_id]

    run_with(server, 3, scenario)


async def _pending_once(installation: Installation, server: ServerProcess) -> list[str]:
    fresh = await installation.connect(server.url)
    try:
        return [(await fresh.receive(timeout=10)).id]
    finally:
        await fresh.close()


def test_a_connection_is_pushed_only_its_own_deliveries(server) -> None:
    group, other_group = new_group_id(), new_group_id()

    async def scenario(who, clients) -> None:
        alice, bob, outsider, left = clients
        await seat(alice, [bob, left], group)
        await seat(outsider, [], other_group)
        await left.leave(group)
        sent = [await alice.send(group, private_message(group)) for _ in range(3)]
        welcome_to_outsider = await alice.send(group, welcome(), recipient=who[2].id)
        assert [(await bob.receive(timeout=10)).id for _ in range(3)] == [r.message_id for r in sent]
        with pytest.raises(TimeoutError):
            await bob.receive(timeout=0.5)  # the welcome is the outsider's alone
        # the outsider is pushed the welcome addressed to it, and nothing else of the group
        assert (await outsider.receive(timeout=10)).id == welcome_to_outsider.message_id
        with pytest.raises(TimeoutError):
            await outsider.receive(timeout=0.5)
        with pytest.raises(TimeoutError):
            await left.receive(timeout=0.5)  # left before they were sent

    run_with(server, 4, scenario)


def test_a_request_cannot_name_another_installation_to_act_as(server) -> None:
    group = new_group_id()

    async def scenario(who, clients) -> None:
        alice, bob = clients
        await seat(alice, [bob], group)
        # fields naming someone else are not part of any request: the proven installation acts
        reply = await bob.request(
            "send", group_id=group, payload=base64.b64encode(private_message(group)).decode(), sender=who[0].id
        )
        sender = query_file(
            str(server.db), "SELECT sender_id FROM sovereign_messages WHERE id = ?", (reply["message_id"],)
        )
        assert sender == [(bytes.fromhex(who[1].id),)]  # the row keeps the key's bytes
        pushed = await alice.receive(timeout=10)
        assert pushed.sender_id == who[1].id

    run_with(server, 2, scenario)


def test_key_packages_are_published_only_by_their_own_installation_and_each_fetched_once(server) -> None:
    async def scenario(who, clients) -> None:
        alice, mallory, carol = clients
        alices = [who[0].key_package() for _ in range(2)]
        # mallory cannot stock alice's KeyPackages (their signature key is alice's), nor her own under alice's name
        assert await error_code(mallory.key_package_publish([alices[0]])) == ErrorCode.INVALID_KEY_PACKAGE
        assert await alice.key_package_publish(alices) == 2
        assert await mallory.key_package_publish([who[1].key_package()]) == 1
        fetched = {await carol.key_package_fetch(who[0].id), await mallory.key_package_fetch(who[0].id)}
        assert fetched == set(alices)  # each handed out once
        assert await error_code(carol.key_package_fetch(who[0].id)) == ErrorCode.NO_KEY_PACKAGE
        assert await carol.key_package_fetch(who[1].id) != alices[0]  # mallory's stock is her own

    run_with(server, 3, scenario)


def test_proving_one_key_does_not_let_a_connection_claim_another(server) -> None:
    async def scenario() -> list[str]:
        raw = await RawClient.open(server.url)
        try:
            ready = await raw.authenticate(alice)
            # a second hello, even a valid one for another key, is refused: the connection stays alice's
            second = await raw.call(raw.hello_frame(bob))
            return [ready["installation"], second["code"]]
        finally:
            await raw.close()

    alice, bob = Installation(), Installation()
    assert asyncio.run(scenario()) == [alice.id, ErrorCode.ALREADY_AUTHENTICATED]


def test_a_binding_is_always_published_for_the_connections_own_installation(server) -> None:
    address = "0x" + "9a" * 20

    async def scenario(who, clients) -> None:
        alice, bob = clients
        # there is no field naming the installation a binding is for: one sent anyway is ignored
        reply = await bob.request("identity_publish", address=address, binding="Ymlu", installation=who[0].id)
        assert reply["installation"] == who[1].id
        stored = query_file(
            str(server.db), "SELECT installation, binding FROM sovereign_identities WHERE address = ?", (address,)
        )
        assert stored == [(who[1].id, b"bin")]
        assert [each.installation for each in (await alice.identity_fetch(address)).installations] == [who[1].id]

    run_with(server, 2, scenario)


def test_welcomes_are_polled_only_by_their_addressee(server) -> None:
    group = new_group_id()

    async def scenario(who, clients) -> None:
        alice, bob, carol = clients
        await seat(alice, [bob], group)
        to_carol = await alice.send(group, welcome(), recipient=who[2].id)
        assert [m.id for m in (await carol.welcomes()).messages] == [to_carol.message_id]
        bobs = (await bob.welcomes()).messages
        assert len(bobs) == 1 and bobs[0].id != to_carol.message_id  # the welcome that seated him, not carol's
        assert (await alice.welcomes()).messages == []
        carols_cursor = (await carol.welcomes()).next_cursor
        assert await error_code(bob.welcomes(cursor=carols_cursor)) == ErrorCode.UNKNOWN_CURSOR

    run_with(server, 3, scenario)
