"""KeyPackage events (kinds 30443 and 443): what we write, what we read, and what we refuse."""

from __future__ import annotations

import base64
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.libraries import mls
from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.group.key_packages import key_package_ref
from protocols.marmot.errors import InvalidEvent
from protocols.marmot.wire import group_data, nostr
from protocols.marmot.wire.key_package_events import (
    CLIENT,
    KEY_PACKAGE_KIND,
    LEGACY_KEY_PACKAGE_KIND,
    MARMOT_EXTENSIONS,
    InvalidKeyPackageEvent,
    key_package_event,
    parse_key_package_event,
)

NOW = 1_790_000_000
RELAYS = ("wss://relay.example", "ws://127.0.0.1:7777")
SECRET = nostr.generate_secret_key(random.Random(3).randbytes)
AUTHOR = nostr.public_key_xonly(SECRET).hex()
#: MDK 0.8.0's tag names, in its order (create_key_package_for_event, kind 30443).
MDK_TAG_ORDER = [
    "d",
    "mls_protocol_version",
    "mls_ciphersuite",
    "mls_extensions",
    "mls_proposals",
    "relays",
    "i",
    "client",
    "encoding",
]


@pytest.fixture(scope="module")
def key_package() -> mls.KeyPackage:
    identity = mls.new_identity(AUTHOR)
    return mls.create_key_package(identity, supported_extensions=MARMOT_EXTENSIONS, now=NOW)[0]


def _signed(unsigned: dict, secret: bytes = SECRET) -> dict:
    return nostr.sign_event(unsigned, secret)


def _retagged(event: dict, name: str, *values: str) -> dict:
    """``event`` re-signed with the tag ``name`` replaced by ``values`` (removed when there are none)."""
    tags = [tag for tag in event["tags"] if tag[0] != name]
    if values:
        tags.append([name, *values])
    return _signed({**event, "tags": tags})


def _event(key_package: mls.KeyPackage, **options) -> dict:
    return _signed(key_package_event(key_package, RELAYS, created_at=NOW, **options))


# --- building ------------------------------------------------------------------------------------


def test_the_event_has_mdks_tags_in_mdks_order(key_package: mls.KeyPackage) -> None:
    unsigned = key_package_event(key_package, RELAYS, created_at=NOW)
    tags = unsigned["tags"]
    ref = key_package_ref(suite(1), key_package).hex()

    assert unsigned["kind"] == KEY_PACKAGE_KIND and unsigned["created_at"] == NOW
    assert [tag[0] for tag in tags] == MDK_TAG_ORDER
    assert len(tags[0][1]) == 64 and int(tags[0][1], 16) >= 0
    assert tags[1:] == [
        ["mls_protocol_version", "1.0"],
        ["mls_ciphersuite", "0x0001"],
        ["mls_extensions", "0x000a", "0xf2ee"],
        ["mls_proposals", "0x000a"],
        ["relays", *RELAYS],
        ["i", ref],
        ["client", CLIENT],
        ["encoding", "base64"],
    ]
    assert base64.b64decode(unsigned["content"]) == encode(key_package), "the bare KeyPackage, not an MLSMessage"


def test_the_legacy_event_has_no_d_tag(key_package: mls.KeyPackage) -> None:
    unsigned = key_package_event(key_package, RELAYS, created_at=NOW, legacy=True, client=None)
    assert unsigned["kind"] == LEGACY_KEY_PACKAGE_KIND
    assert [tag[0] for tag in unsigned["tags"]] == [n for n in MDK_TAG_ORDER if n not in ("d", "client")]


def test_slots_are_random_unless_given(key_package: mls.KeyPackage) -> None:
    first, second = (key_package_event(key_package, RELAYS, created_at=NOW)["tags"][0] for _ in range(2))
    assert first != second
    given_slot = key_package_event(key_package, RELAYS, created_at=NOW, slot="5e" * 32)["tags"][0]
    assert given_slot == ["d", "5e" * 32]


def test_a_key_package_without_the_marmot_extensions_is_refused(key_package: mls.KeyPackage) -> None:
    without_last_resort = mls.create_key_package(
        mls.new_identity(AUTHOR), supported_extensions=(group_data.GROUP_DATA_EXTENSION,), now=NOW
    )[0]
    with pytest.raises(InvalidKeyPackageEvent, match="0x000a") as caught:
        key_package_event(without_last_resort, RELAYS, created_at=NOW)
    assert caught.value.field == "mls_extensions"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"slot": "AB" * 32}, "d"),
        ({"slot": "ab"}, "d"),
        ({"relays": ()}, "relays"),
        ({"relays": "wss://one.example"}, "relays"),
        ({"relays": ("https://relay.example",)}, "relays"),
        ({"relays": ("wss://user:pw@relay.example",)}, "relays"),
        ({"relays": ("wss://relay.example#x",)}, "relays"),
    ],
)
def test_building_refuses_bad_arguments(key_package: mls.KeyPackage, options: dict, field: str) -> None:
    arguments = {"relays": RELAYS, **options}
    with pytest.raises(InvalidKeyPackageEvent) as caught:
        key_package_event(key_package, arguments.pop("relays"), created_at=NOW, **arguments)
    assert caught.value.field == field


# --- reading -------------------------------------------------------------------------------------


@pytest.mark.parametrize("legacy", [False, True])
def test_what_we_write_we_read(key_package: mls.KeyPackage, legacy: bool) -> None:
    event = _event(key_package, legacy=legacy)
    parsed = parse_key_package_event(event, now=NOW)

    assert encode(parsed.key_package) == encode(key_package)
    assert parsed.author == AUTHOR and parsed.event_id == event["id"] and parsed.created_at == NOW
    assert parsed.kind == (LEGACY_KEY_PACKAGE_KIND if legacy else KEY_PACKAGE_KIND)
    assert parsed.slot == (None if legacy else event["tags"][0][1])
    assert parsed.relays == RELAYS and parsed.client == CLIENT
    assert parsed.ref == key_package_ref(suite(1), key_package)


def test_json_text_is_read_as_well(key_package: mls.KeyPackage) -> None:
    event = _event(key_package)
    assert parse_key_package_event(json.dumps(event)).event_id == event["id"]


def _with_content(event: dict, content: str, *encoding: str) -> dict:
    tags = [tag for tag in event["tags"] if tag[0] != "encoding"] + ([["encoding", *encoding]] if encoding else [])
    return _signed({**event, "content": content, "tags": tags})


def test_hex_content_is_read_when_the_tag_says_hex_or_is_absent(key_package: mls.KeyPackage) -> None:
    event = _event(key_package)
    as_hex = encode(key_package).hex()
    for variant in (_with_content(event, as_hex, "hex"), _with_content(event, as_hex)):
        assert encode(parse_key_package_event(variant).key_package) == encode(key_package)


def test_base64_content_without_an_encoding_tag_is_read(key_package: mls.KeyPackage) -> None:
    event = _with_content(_event(key_package), _event(key_package)["content"])
    assert encode(parse_key_package_event(event).key_package) == encode(key_package)


def test_an_mlsmessage_wrapped_key_package_is_read(key_package: mls.KeyPackage) -> None:
    wrapped = base64.b64encode(mls.key_package_to_bytes(key_package)).decode()
    event = _with_content(_event(key_package), wrapped, "base64")
    assert encode(parse_key_package_event(event).key_package) == encode(key_package)


def _broken_signature(key_package: mls.KeyPackage) -> str:
    data = bytearray(encode(key_package))
    data[-1] ^= 1
    return base64.b64encode(bytes(data)).decode()


REFUSALS = {
    "a kind that is not a KeyPackage": (lambda e, kp: _signed({**e, "kind": 1}), "kind"),
    "30443 without d": (lambda e, kp: _retagged(e, "d"), "d"),
    "30443 with an empty d": (lambda e, kp: _retagged(e, "d", ""), "d"),
    "i of another KeyPackage": (lambda e, kp: _retagged(e, "i", "00" * 32), "i"),
    "signed by someone else": (lambda e, kp: _signed(e, nostr.generate_secret_key()), "pubkey"),
    "another cipher suite tag": (lambda e, kp: _retagged(e, "mls_ciphersuite", "0x0002"), "mls_ciphersuite"),
    "a decimal cipher suite tag": (lambda e, kp: _retagged(e, "mls_ciphersuite", "1"), "mls_ciphersuite"),
    "another protocol version": (lambda e, kp: _retagged(e, "mls_protocol_version", "2.0"), "mls_protocol_version"),
    "an uppercase id": (lambda e, kp: _retagged(e, "mls_extensions", "0x000a", "0xF2EE"), "mls_extensions"),
    "a repeated id-list tag": (
        lambda e, kp: _signed({**e, "tags": [*e["tags"], ["mls_proposals", "0x000a"]]}),
        "mls_proposals",
    ),
    "an unknown encoding": (lambda e, kp: _retagged(e, "encoding", "base32"), "encoding"),
    "content that is not base64": (lambda e, kp: _with_content(e, "not base64!", "base64"), "content"),
    "content that is not a KeyPackage": (lambda e, kp: _with_content(e, "AAEC", "base64"), "content"),
    "a KeyPackage whose signature fails": (lambda e, kp: _with_content(e, _broken_signature(kp), "base64"), "content"),
    "a relay that is not ws": (lambda e, kp: _retagged(e, "relays", "http://relay.example"), "relays"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_reading_refuses(key_package: mls.KeyPackage, case: str) -> None:
    damage, field = REFUSALS[case]
    with pytest.raises(InvalidKeyPackageEvent) as caught:
        parse_key_package_event(damage(_event(key_package), key_package), now=NOW)
    assert caught.value.field == field


def test_reading_refuses_a_key_package_outside_its_lifetime(key_package: mls.KeyPackage) -> None:
    with pytest.raises(InvalidKeyPackageEvent, match="lifetime") as caught:
        parse_key_package_event(_event(key_package), now=NOW + 400 * 24 * 3600)
    assert caught.value.field == "content"


def test_an_event_with_a_bad_signature_is_an_invalid_event(key_package: mls.KeyPackage) -> None:
    with pytest.raises(InvalidEvent) as caught:
        parse_key_package_event({**_event(key_package), "sig": "00" * 64})
    assert caught.value.reason == "bad_signature"


relay = st.builds(
    "{}://{}{}".format,
    st.sampled_from(["ws", "wss"]),
    st.sampled_from(["relay.example", "127.0.0.1", "[::1]", "a.b.example"]),
    st.sampled_from(["", ":7777", "/path", ":443/x"]),
)


@settings(max_examples=25, deadline=None)
@given(relays=st.lists(relay, min_size=1, max_size=4), legacy=st.booleans())
def test_relays_and_kind_round_trip(key_package: mls.KeyPackage, relays: list[str], legacy: bool) -> None:
    event = _signed(key_package_event(key_package, relays, created_at=NOW, legacy=legacy))
    parsed = parse_key_package_event(event, now=NOW)
    assert parsed.relays == tuple(relays)
    assert parsed.kind == (LEGACY_KEY_PACKAGE_KIND if legacy else KEY_PACKAGE_KIND)
