"""``tessera serve``'s protocol against a real server process: the handshake, every request type, and every
malformed request answered with its own error code on a connection that stays usable."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from protocols.libraries.delivery import frames
from protocols.libraries.delivery.client import ServerError
from protocols.libraries.delivery.codes import ErrorCode
from protocols.libraries.delivery.records import APPLICATION, COMMIT, READ
from protocols.libraries.mls.messages.framing import ContentType
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

MAX_FRAME = 16_384
MAX_PAYLOAD = 4_096
AUTH_TIMEOUT = 2
MAX_INSTALLATIONS = 2
ADDRESS = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"  # EIP-55 checksummed


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = {
        "server": {"max_frame_bytes": MAX_FRAME, "auth_timeout_s": AUTH_TIMEOUT},
        "limits": {"max_payload_bytes": MAX_PAYLOAD, "max_installations_per_address": MAX_INSTALLATIONS},
    }
    with serving(tmp_path_factory.mktemp("protocol"), **config) as running:
        yield running


def stored_count(db: Path) -> int:
    return int(query_file(str(db), "SELECT count(*) FROM sovereign_messages")[0][0])


def directory(db: Path) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in query_file(str(db), "SELECT * FROM sovereign_identities ORDER BY installation")]


# --- the handshake ---------------------------------------------------------------------------------


def test_the_server_challenges_first_and_a_signed_hello_makes_the_connection_ready(server) -> None:
    async def scenario() -> dict[str, object]:
        raw = await RawClient.open(server.url)
        try:
            return await raw.call({**raw.hello_frame(alice), "id": "h1"})
        finally:
            await raw.close()

    alice = Installation()
    ready = asyncio.run(scenario())
    assert ready == {
        "type": "ready",
        "id": "h1",
        "installation": alice.id,
        "max_frame_bytes": MAX_FRAME,
        "max_payload_bytes": MAX_PAYLOAD,
    }


def test_requests_before_the_hello_are_unauthenticated_and_the_connection_stays_open(server) -> None:
    async def scenario() -> list[dict[str, object]]:
        raw = await RawClient.open(server.url)
        try:
            refused = await raw.call({"type": "history", "id": 1, "group_id": new_group_id()})
            also = await raw.call({"type": "join", "id": 2, "group_id": new_group_id()})
            ready = await raw.call(raw.hello_frame(alice))
            joined = await raw.call({"type": "join", "id": 3, "group_id": new_group_id()})
            return [refused, also, ready, joined]
        finally:
            await raw.close()

    alice = Installation()
    refused, also, ready, joined = asyncio.run(scenario())
    assert (refused["type"], refused["code"], refused["id"]) == ("error", ErrorCode.UNAUTHENTICATED, 1)
    assert (also["code"], also["id"]) == (ErrorCode.UNAUTHENTICATED, 2)
    assert ready["type"] == "ready" and joined == {"type": "joined", "id": 3, **_membership(joined, True)}


def _membership(reply: dict[str, object], member: bool) -> dict[str, object]:
    return {"group_id": reply["group_id"], "member": member, "changed": True}


@pytest.mark.parametrize("how", ["another_key_signed", "wrong_nonce"])
def test_a_hello_whose_signature_does_not_verify_is_auth_failed_and_closes_the_connection(server, how) -> None:
    async def scenario() -> tuple[dict[str, object], int | None]:
        raw = await RawClient.open(server.url)
        if how == "another_key_signed":  # claiming alice's key with mallory's signature
            hello = raw.hello_frame(alice, signer=mallory)
        else:  # a signature over some other nonce (a replayed hello)
            raw.nonce = bytes(32)
            hello = raw.hello_frame(alice)
        refused = await raw.call(hello)
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(raw.ws.recv(), 10)
        return refused, closed.value.rcvd.code if closed.value.rcvd else None

    alice, mallory = Installation(), Installation()
    refused, close_code = asyncio.run(scenario())
    assert refused["code"] == ErrorCode.AUTH_FAILED and close_code == 1008


def test_a_connection_that_never_says_hello_is_closed_after_the_auth_timeout(server) -> None:
    async def scenario() -> tuple[dict[str, object], int | None, float]:
        raw = await RawClient.open(server.url)
        started = asyncio.get_running_loop().time()
        said = json.loads(await asyncio.wait_for(raw.ws.recv(), AUTH_TIMEOUT + 5))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(raw.ws.recv(), 10)
        waited = asyncio.get_running_loop().time() - started
        return said, closed.value.rcvd.code if closed.value.rcvd else None, waited

    said, close_code, waited = asyncio.run(scenario())
    assert said["code"] == ErrorCode.UNAUTHENTICATED and close_code == 1008
    assert AUTH_TIMEOUT - 0.5 <= waited < AUTH_TIMEOUT + 5


# --- malformed requests ------------------------------------------------------------------------------


def test_every_malformed_request_has_its_own_code_changes_nothing_and_leaves_the_connection_usable(server) -> None:
    """One connection gets every kind of bad request; after each, a good request is answered normally."""
    group = new_group_id()
    foreign = new_group_id()
    good_payload = base64.b64encode(private_message(group)).decode()
    big_payload = base64.b64encode(private_message(group, size=MAX_PAYLOAD + 100)).decode()

    cases: list[tuple[str | bytes | dict[str, object], str]] = [
        ("this is not json", ErrorCode.MALFORMED_JSON),
        ("[1, 2, 3]", ErrorCode.MALFORMED_JSON),
        (b"\x00binary", ErrorCode.MALFORMED_JSON),
        ({"type": "subscribe", "id": 1}, ErrorCode.UNKNOWN_TYPE),
        ({"id": 2}, ErrorCode.MISSING_FIELD),
        ({"type": 7, "id": 2}, ErrorCode.BAD_FIELD),
        ({"type": "send", "id": [3]}, ErrorCode.BAD_FIELD),
        ({"type": "send", "id": 4, "payload": good_payload}, ErrorCode.MISSING_FIELD),
        ({"type": "send", "id": 5, "group_id": group}, ErrorCode.MISSING_FIELD),
        ({"type": "send", "id": 6, "group_id": 17, "payload": good_payload}, ErrorCode.BAD_FIELD),
        ({"type": "send", "id": 7, "group_id": group, "payload": "not base64!"}, ErrorCode.BAD_FIELD),
        ({"type": "send", "id": 8, "group_id": group, "payload": good_payload, "recipient": 5}, ErrorCode.BAD_FIELD),
        ({"type": "history", "id": 9, "group_id": group, "limit": "ten"}, ErrorCode.BAD_FIELD),
        ({"type": "history", "id": 10, "group_id": group, "limit": 0}, ErrorCode.BAD_LIMIT),
        ({"type": "history", "id": 11, "group_id": group, "direction": "sideways"}, ErrorCode.BAD_DIRECTION),
        ({"type": "history", "id": 12, "group_id": group, "cursor": "no-such-cursor"}, ErrorCode.MALFORMED_CURSOR),
        ({"type": "ack", "id": 13, "ids": "01H0000000000000000000000"}, ErrorCode.BAD_FIELD),
        ({"type": "ack", "id": 14}, ErrorCode.MISSING_FIELD),
        ({"type": "read", "id": 15, "ids": [1, 2]}, ErrorCode.BAD_FIELD),
        ({"type": "key_package_publish", "id": 16, "key_packages": ["AAAA"]}, ErrorCode.INVALID_KEY_PACKAGE),
        ({"type": "key_package_fetch", "id": 17}, ErrorCode.MISSING_FIELD),
        ({"type": "key_package_fetch", "id": 18, "installation": "ab"}, ErrorCode.BAD_INSTALLATION),
        ({"type": "join", "id": 19, "group_id": "XYZ"}, ErrorCode.BAD_GROUP_ID),
        (
            {"type": "send", "id": 20, "group_id": group, "payload": base64.b64encode(b"junk").decode()},
            ErrorCode.MALFORMED_PAYLOAD,
        ),
        ({"type": "send", "id": 21, "group_id": foreign, "payload": good_payload}, ErrorCode.WRONG_GROUP),
        ({"type": "send", "id": 22, "group_id": group, "payload": big_payload}, ErrorCode.PAYLOAD_TOO_LARGE),
        ({"type": "send", "id": 23, "group_id": foreign, "payload": _payload(foreign)}, ErrorCode.NOT_A_MEMBER),
        ({"type": "history", "id": 24, "group_id": foreign}, ErrorCode.NOT_A_MEMBER),
        (
            {"type": "hello", "id": 25, "installation": "00" * 32, "signature": "00" * 64},
            ErrorCode.ALREADY_AUTHENTICATED,
        ),
        ({"type": "identity_publish", "id": 27, "binding": "AAAA"}, ErrorCode.MISSING_FIELD),
        ({"type": "identity_publish", "id": 28, "address": ADDRESS}, ErrorCode.MISSING_FIELD),
        ({"type": "identity_publish", "id": 29, "address": 5, "binding": "AAAA"}, ErrorCode.BAD_FIELD),
        ({"type": "identity_publish", "id": 30, "address": ADDRESS, "binding": "not base64!"}, ErrorCode.BAD_FIELD),
        ({"type": "identity_publish", "id": 31, "address": "0x12", "binding": "AAAA"}, ErrorCode.BAD_ADDRESS),
        (
            {"type": "identity_publish", "id": 32, "address": "0x" + ADDRESS[2:].swapcase(), "binding": "AAAA"},
            ErrorCode.BAD_ADDRESS,
        ),
        ({"type": "identity_publish", "id": 33, "address": ADDRESS, "binding": ""}, ErrorCode.BAD_BINDING),
        (
            {"type": "identity_publish", "id": 34, "address": ADDRESS, "binding": frames.b64(b"x" * 1025)},
            ErrorCode.BINDING_TOO_LARGE,
        ),
        ({"type": "identity_fetch", "id": 35}, ErrorCode.MISSING_FIELD),
        ({"type": "identity_fetch", "id": 36, "address": "alice"}, ErrorCode.BAD_ADDRESS),
        ({"type": "welcomes", "id": 37, "cursor": "no-such-cursor"}, ErrorCode.MALFORMED_CURSOR),
        ({"type": "welcomes", "id": 38, "cursor": "12.01ARZ3NDEKTSV4RRFFQ69G5FAV"}, ErrorCode.UNKNOWN_CURSOR),
        ({"type": "welcomes", "id": 39, "cursor": 12}, ErrorCode.BAD_FIELD),
        ({"type": "welcomes", "id": 40, "limit": 201}, ErrorCode.BAD_LIMIT),
        ({"type": "welcomes", "id": 41, "limit": "ten"}, ErrorCode.BAD_FIELD),
        ("x" * (MAX_FRAME + 1), ErrorCode.FRAME_TOO_LARGE),
        (
            json.dumps({"type": "send", "id": 26, "group_id": group, "payload": "A" * MAX_FRAME}),
            ErrorCode.FRAME_TOO_LARGE,
        ),
    ]

    async def scenario() -> list[tuple[dict[str, object], dict[str, object]]]:
        raw = await RawClient.open(server.url)
        await raw.authenticate(alice)
        joined = await raw.call({"type": "join", "id": "setup", "group_id": group})
        assert joined["type"] == "joined"
        answers = []
        for number, (frame, _) in enumerate(cases):
            refused = await raw.call(frame)
            still_fine = await raw.call({"type": "history", "id": f"check{number}", "group_id": group})
            answers.append((refused, still_fine))
        await raw.close()
        return answers

    alice = Installation()
    before, bound = stored_count(server.db), directory(server.db)
    answers = asyncio.run(scenario())
    for (frame, code), (refused, still_fine) in zip(cases, answers, strict=True):
        assert refused["type"] == "error" and refused["code"] == code, (frame if len(frame) < 200 else "…", refused)
        assert isinstance(refused["message"], str) and refused["message"]
        if isinstance(frame, dict) and isinstance(frame.get("id"), int):
            assert refused["id"] == frame["id"]  # the reply names the request it refuses
        assert still_fine["type"] == "history_page", still_fine
    too_large: dict[str, Any] = answers[[code for _, code in cases].index(ErrorCode.PAYLOAD_TOO_LARGE)][0]
    assert (too_large["limit"], too_large["allowed"]) == ("max_payload_bytes", MAX_PAYLOAD)
    assert too_large["value"] > MAX_PAYLOAD
    big_binding: dict[str, Any] = answers[[code for _, code in cases].index(ErrorCode.BINDING_TOO_LARGE)][0]
    assert (big_binding["limit"], big_binding["value"], big_binding["allowed"]) == ("max_binding_bytes", 1025, 1024)
    assert stored_count(server.db) == before  # no refused request stored anything
    assert directory(server.db) == bound


def _payload(group_id: str) -> str:
    return base64.b64encode(private_message(group_id)).decode()


# --- each request type ----------------------------------------------------------------------------


def test_every_request_type_through_the_client(server) -> None:
    async def scenario() -> None:
        alice_client, bob_client = await alice.connect(server.url), await bob.connect(server.url)
        try:
            await seat(alice_client, [bob_client], group)
            sent = [await alice_client.send(group, payload) for payload in payloads]
            assert [r.message_type for r in sent] == [APPLICATION] * 5 and not any(r.superseded for r in sent)
            commit = await alice_client.send(group, private_message(group, epoch=1, content_type=ContentType.COMMIT))
            late = await bob_client.send(group, private_message(group, epoch=1, content_type=ContentType.COMMIT))
            assert (commit.message_type, commit.superseded, late.superseded) == (COMMIT, False, True)
            again = await alice_client.send(group, once)
            retried = await alice_client.send(group, once)  # the same payload again: one message
            assert retried.duplicate and retried.message_id == again.message_id and not again.duplicate

            pushed = [(await bob_client.receive(timeout=10)).id for _ in range(7)]
            expected = [r.message_id for r in sent] + [commit.message_id, again.message_id]
            assert pushed == expected  # server order, the retry not pushed twice
            assert await bob_client.read(pushed[:2]) == 2
            assert await bob_client.ack(pushed) == 5  # the two read ones are delivered already
            states = query_file(
                str(server.db),
                "SELECT status FROM sovereign_delivery_status WHERE recipient_id = ? AND message_id = ?",
                (bob.id, pushed[0]),
            )
            assert states == [(READ,)]

            pushed_to_alice = await alice_client.receive(timeout=10)  # bob's losing commit, flagged
            assert (pushed_to_alice.id, pushed_to_alice.superseded) == (late.message_id, True)

            newest = await bob_client.history(group, limit=3)
            assert [m.id for m in newest.messages] == [commit.message_id, late.message_id, again.message_id]
            assert [m.superseded for m in newest.messages] == [False, True, False]
            older = await bob_client.history(group, cursor=newest.next_cursor, limit=200)
            assert len(older.messages) == 6 and not older.has_more  # the welcome and five messages
            forward = await bob_client.history(group, direction="forward", limit=2)
            assert forward.has_more and forward.messages[1].id == sent[0].message_id
            assert forward.messages[1].payload == payloads[0]

            assert await alice_client.key_package_publish([alice.key_package(), alice.key_package()]) == 2
            fetched = await bob_client.key_package_fetch(alice.id)
            assert fetched and await bob_client.key_package_fetch(alice.id) != fetched
            with pytest.raises(ServerError) as none_left:
                await bob_client.key_package_fetch(alice.id)
            assert none_left.value.code == ErrorCode.NO_KEY_PACKAGE

            left = await bob_client.leave(group)
            assert (left.member, left.changed) == (False, True)
            with pytest.raises(ServerError) as gone:
                await bob_client.history(group)
            assert gone.value.code == ErrorCode.NOT_A_MEMBER
        finally:
            await alice_client.close()
            await bob_client.close()

    alice, bob = Installation(), Installation()
    group = new_group_id()
    payloads = [private_message(group, epoch=1) for _ in range(5)]
    once = private_message(group, epoch=1)
    asyncio.run(scenario())


def test_the_identity_directory_through_the_client(server) -> None:
    async def scenario() -> None:
        clients = [await each.connect(server.url) for each in (first, second, third, stranger)]
        one, two, three, asker = clients
        try:
            published = await one.identity_publish(ADDRESS, b"first's binding")
            assert (published.address, published.installation, published.changed) == (ADDRESS.lower(), first.id, True)
            assert not (await one.identity_publish(ADDRESS.lower(), b"first's binding")).changed
            assert (await one.identity_publish(ADDRESS, b"first's binding, renewed")).changed
            assert (await two.identity_publish(ADDRESS, b"second's binding")).changed

            bound = directory(server.db)
            with pytest.raises(ServerError) as other_account:
                await one.identity_publish("0x" + "34" * 20, b"first's other account")
            assert other_account.value.code == ErrorCode.INSTALLATION_BOUND
            with pytest.raises(ServerError) as too_many:
                await three.identity_publish(ADDRESS, b"third's binding")
            assert too_many.value.code == ErrorCode.TOO_MANY_INSTALLATIONS
            assert too_many.value.details == {
                "limit": "max_installations_per_address",
                "value": MAX_INSTALLATIONS + 1,
                "allowed": MAX_INSTALLATIONS,
            }
            assert directory(server.db) == bound  # neither refusal changed anything

            fetched = await asker.identity_fetch(ADDRESS)  # anyone may read the directory
            assert fetched.address == ADDRESS.lower()
            expected = sorted([(first.id, b"first's binding, renewed"), (second.id, b"second's binding")])
            assert [(each.installation, each.binding) for each in fetched.installations] == expected
            assert all(isinstance(each.published_at, int) and each.published_at > 0 for each in fetched.installations)
            unknown = await asker.identity_fetch("0x" + "56" * 20)
            assert (unknown.address, unknown.installations) == ("0x" + "56" * 20, [])
        finally:
            for client in clients:
                await client.close()

    first, second, third, stranger = (Installation() for _ in range(4))
    asyncio.run(scenario())


def test_polling_welcomes_through_the_client(server) -> None:
    async def scenario() -> None:
        inviter, invitee = await alice.connect(server.url), await bob.connect(server.url)
        try:
            groups = [new_group_id() for _ in range(2)]
            for group in groups:
                await inviter.join(group)
            sent = [await inviter.send(groups[n % 2], welcome(), recipient=bob.id) for n in range(5)]
            pushed = [await invitee.receive(timeout=10) for _ in sent]
            first = await invitee.welcomes(limit=3)
            assert [m.id for m in first.messages] == [r.message_id for r in sent[:3]] and first.has_more
            assert first.messages == pushed[:3]  # the same messages, in the same shape, as the pushes
            rest = await invitee.welcomes(cursor=first.next_cursor)
            assert [m.id for m in rest.messages] == [r.message_id for r in sent[3:]] and not rest.has_more
            assert (await invitee.welcomes(cursor=rest.next_cursor)).messages == []
            later = await inviter.send(groups[0], welcome(), recipient=bob.id)
            polled = await invitee.welcomes(cursor=rest.next_cursor)
            assert [m.id for m in polled.messages] == [later.message_id]
            assert (await inviter.welcomes()).messages == []  # none was addressed to the inviter
        finally:
            await inviter.close()
            await invitee.close()

    alice, bob = Installation(), Installation()
    asyncio.run(scenario())


# --- plain HTTP on the same port -------------------------------------------------------------------


def test_healthz_answers_json_and_metrics_answers_prometheus_text(server) -> None:
    async def scenario() -> dict[str, object]:
        client = await Installation().connect(server.url)
        try:
            return server.health()
        finally:
            await client.close()

    health = asyncio.run(scenario())
    assert health["status"] == "ok" and health["database"] == str(server.db)
    assert health["connections"] == 1 and float(str(health["uptime_s"])) > 0
    status, content_type, text = server.http("/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    for name in (
        "tessera_serve_connections ",
        'tessera_serve_requests_total{type="hello"}',
        "tessera_serve_store_latency_seconds_bucket{",
        "tessera_serve_pending_deliveries ",
        "tessera_serve_database_bytes ",
    ):
        assert name in text, name
    assert float(_sample(text, "tessera_serve_database_bytes")) > 0
    assert server.http("/nothing-here")[0] == 426  # anything else is the WebSocket endpoint


def _sample(text: str, name: str) -> str:
    return next(line.split()[-1] for line in text.splitlines() if line.startswith(name + " "))
