"""Welcome rumors (kind 444): what we write, what we read, and what we refuse."""

from __future__ import annotations

import base64
import json
import random

import pytest

from protocols.libraries import mls
from protocols.marmot.wire import nostr, rumors
from protocols.marmot.wire.key_package_events import CLIENT, MARMOT_EXTENSIONS
from protocols.marmot.wire.welcome_events import (
    WELCOME_KIND,
    InvalidWelcomeRumor,
    parse_welcome_rumor,
    welcome_rumor,
)

NOW = 1_790_000_000
RELAYS = ("wss://relay.example", "ws://127.0.0.1:7777")
KEY_PACKAGE_EVENT_ID = "4b" * 32
ADMIN = nostr.public_key_xonly(nostr.generate_secret_key(random.Random(4).randbytes)).hex()
INVITEE = nostr.public_key_xonly(nostr.generate_secret_key(random.Random(5).randbytes)).hex()


@pytest.fixture(scope="module")
def invitation() -> tuple[bytes, mls.Identity, mls.KeyPackagePrivate]:
    """A real Welcome (MLSMessage bytes) from our engine, and the invitee's identity and KeyPackage."""
    invitee = mls.new_identity(INVITEE)
    key_package, private = mls.create_key_package(invitee, supported_extensions=MARMOT_EXTENSIONS, now=NOW)
    group = mls.create_group(mls.new_identity(ADMIN), bytes(32), now=NOW)
    return mls.commit(group, add=[key_package]).welcomes[INVITEE], invitee, private


@pytest.fixture(scope="module")
def welcome(invitation: tuple[bytes, mls.Identity, mls.KeyPackagePrivate]) -> bytes:
    return invitation[0]


def _rumor(welcome: bytes, **options) -> dict:
    arguments = {"sender_pubkey": ADMIN, "key_package_event_id": KEY_PACKAGE_EVENT_ID, "relays": RELAYS}
    return welcome_rumor(welcome, created_at=NOW, **{**arguments, **options})


def _remade(rumor: dict, *, tags: list | None = None, content: str | None = None, kind: int | None = None) -> dict:
    """A rumor with fields changed and its id recomputed."""
    tags = rumor["tags"] if tags is None else tags
    content = rumor["content"] if content is None else content
    return rumors.make(rumor["pubkey"], rumor["created_at"], content, kind=kind or rumor["kind"], tags=tags)


def _retagged(rumor: dict, name: str, *values: str) -> dict:
    tags = [tag for tag in rumor["tags"] if tag[0] != name] + ([[name, *values]] if values else [])
    return _remade(rumor, tags=tags)


def test_the_rumor_has_mdks_shape(welcome: bytes) -> None:
    rumor = _rumor(welcome)
    assert set(rumor) == {"id", "pubkey", "created_at", "kind", "tags", "content"}, "never signed"
    assert rumor["kind"] == WELCOME_KIND and rumor["pubkey"] == ADMIN
    assert rumor["tags"] == [
        ["relays", *RELAYS],
        ["e", KEY_PACKAGE_EVENT_ID],
        ["client", CLIENT],
        ["encoding", "base64"],
    ]
    assert base64.b64decode(rumor["content"]) == welcome
    assert rumor["id"] == nostr.compute_event_id(rumor)


def test_what_we_write_we_read_and_join_with(invitation: tuple[bytes, mls.Identity, mls.KeyPackagePrivate]) -> None:
    welcome, invitee, private = invitation
    rumor = _rumor(welcome)
    for form in (rumor, json.dumps(rumor), json.dumps(rumor).encode()):
        parsed = parse_welcome_rumor(form)
        assert parsed.welcome == welcome
        assert parsed.key_package_event_id == KEY_PACKAGE_EVENT_ID
        assert parsed.relays == RELAYS and parsed.sender == ADMIN
        assert parsed.rumor_id == rumor["id"] and parsed.created_at == NOW
    state = mls.join_from_welcome(invitee, private, parse_welcome_rumor(rumor).welcome)
    assert set(mls.member_credentials(state).values()) == {ADMIN, INVITEE}


def test_hex_content_is_read_when_the_tag_says_hex_or_is_absent(welcome: bytes) -> None:
    rumor = _rumor(welcome, client=None)
    as_hex = [tag for tag in rumor["tags"] if tag[0] != "encoding"]
    for tags in ([*as_hex, ["encoding", "hex"]], as_hex):
        assert parse_welcome_rumor(_remade(rumor, tags=tags, content=welcome.hex())).welcome == welcome


def test_base64_without_an_encoding_tag_is_read(welcome: bytes) -> None:
    rumor = _retagged(_rumor(welcome), "encoding")
    assert parse_welcome_rumor(rumor).welcome == welcome


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"key_package_event_id": "AB" * 32}, "e"),
        ({"key_package_event_id": "ab"}, "e"),
        ({"relays": ()}, "relays"),
        ({"relays": ("https://relay.example",)}, "relays"),
    ],
)
def test_building_refuses_bad_arguments(welcome: bytes, options: dict, field: str) -> None:
    with pytest.raises(InvalidWelcomeRumor) as caught:
        _rumor(welcome, **options)
    assert caught.value.field == field


def test_building_refuses_what_is_not_a_welcome(welcome: bytes) -> None:
    key_package = mls.create_key_package(mls.new_identity(INVITEE), now=NOW)[0]
    with pytest.raises(InvalidWelcomeRumor, match="Welcome") as caught:
        _rumor(mls.key_package_to_bytes(key_package))
    assert caught.value.field == "content"


REFUSALS = {
    "a signature": (lambda r: {**r, "sig": "00" * 64}, "sig"),
    "a wrong id": (lambda r: {**r, "id": "00" * 32}, "rumor"),
    "a missing field": (lambda r: {k: v for k, v in r.items() if k != "created_at"}, "rumor"),
    "another kind": (lambda r: _remade(r, kind=445), "kind"),
    "no e tag": (lambda r: _retagged(r, "e"), "e"),
    "an e tag that is not an id": (lambda r: _retagged(r, "e", "nope"), "e"),
    "two e tags": (lambda r: _remade(r, tags=[*r["tags"], ["e", "cd" * 32]]), "e"),
    "no relays tag": (lambda r: _retagged(r, "relays"), "relays"),
    "an empty relays tag": (lambda r: _remade(r, tags=[["relays"], *r["tags"][1:]]), "relays"),
    "a relay that is not ws": (lambda r: _retagged(r, "relays", "ftp://x.example"), "relays"),
    "two relays tags": (lambda r: _remade(r, tags=[*r["tags"], ["relays", "wss://b.example"]]), "relays"),
    "an unknown encoding": (lambda r: _retagged(r, "encoding", "base85"), "encoding"),
    "content that is not base64": (lambda r: _remade(r, content="%%%"), "content"),
    "content that is not a Welcome": (lambda r: _remade(r, content=base64.b64encode(b"\0\1\0\5").decode()), "content"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_reading_refuses(welcome: bytes, case: str) -> None:
    damage, field = REFUSALS[case]
    with pytest.raises(InvalidWelcomeRumor) as caught:
        parse_welcome_rumor(damage(_rumor(welcome)))
    assert caught.value.field == field


@pytest.mark.parametrize("raw", [b"\xff", "[1, 2]", "not json"])
def test_reading_refuses_what_is_not_a_json_object(raw: str | bytes) -> None:
    with pytest.raises(InvalidWelcomeRumor) as caught:
        parse_welcome_rumor(raw)
    assert caught.value.field == "rumor"
