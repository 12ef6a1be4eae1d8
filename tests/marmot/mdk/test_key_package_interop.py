"""KeyPackage events between MDK 0.8.0 and us: each reads the other's, MDK invites our KeyPackage, we join.

The tests at the end pin what MDK checks when it reads a KeyPackage event
(and what it does not), since our events must pass those checks.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from types import ModuleType

import pytest

from protocols.libraries import mls
from protocols.libraries.mls.codec import encode
from protocols.marmot.errors import InvalidEvent
from protocols.marmot.wire import nostr
from protocols.marmot.wire.key_package_events import (
    KEY_PACKAGE_KIND,
    LEGACY_KEY_PACKAGE_KIND,
    MARMOT_EXTENSIONS,
    InvalidKeyPackageEvent,
    key_package_event,
    parse_key_package_event,
)
from protocols.marmot.wire.welcome_events import parse_welcome_rumor
from tests.marmot.mdk.mdk_peer import DEFAULT_RELAYS, MdkMember, open_group_event

pytestmark = pytest.mark.peer

MakeMember = Callable[[str], MdkMember]


class Ours:
    """Our side: a Nostr key, its MLS identity and one KeyPackage, published as a signed event."""

    def __init__(self, *, legacy: bool = False):
        self.secret_key = nostr.generate_secret_key()
        self.pubkey = nostr.public_key_xonly(self.secret_key).hex()
        self.identity = mls.new_identity(self.pubkey)
        self.key_package, self.private = mls.create_key_package(self.identity, supported_extensions=MARMOT_EXTENSIONS)
        unsigned = key_package_event(self.key_package, DEFAULT_RELAYS, created_at=nostr_now(), legacy=legacy)
        self.event = nostr.sign_event(unsigned, self.secret_key)

    def retagged(self, name: str, *values: str) -> dict:
        """Our event re-signed with tag ``name`` holding ``values`` (dropped when there are none)."""
        tags = [tag for tag in self.event["tags"] if tag[0] != name] + ([[name, *values]] if values else [])
        return nostr.sign_event({**self.event, "tags": tags}, self.secret_key)


def nostr_now() -> int:
    return int(time.time())


@pytest.mark.parametrize("legacy", [False, True], ids=["30443", "443"])
def test_mdks_key_package_events_parse_with_ours(mdk_member: MakeMember, legacy: bool) -> None:
    alice = mdk_member("alice")
    event = alice.key_package_event(legacy=legacy)
    parsed = parse_key_package_event(event, now=nostr_now())

    tags = {tag[0]: tag[1:] for tag in event["tags"]}
    assert parsed.author == alice.pubkey
    assert parsed.kind == (LEGACY_KEY_PACKAGE_KIND if legacy else KEY_PACKAGE_KIND)
    assert parsed.ref.hex() == tags["i"][0]
    assert parsed.slot == (None if legacy else tags["d"][0])
    assert parsed.relays == DEFAULT_RELAYS and parsed.client == "MDK/0.8.0"
    assert set(MARMOT_EXTENSIONS) <= set(parsed.key_package.leaf_node.capabilities.extensions)


@pytest.mark.parametrize("legacy", [False, True], ids=["30443", "443"])
def test_our_key_package_events_parse_with_mdk(mdk_member: MakeMember, legacy: bool) -> None:
    ours = Ours(legacy=legacy)
    content = mdk_member("alice").mdk.parse_key_package(json.dumps(ours.event))
    assert base64.b64decode(content) == encode(ours.key_package)


def test_mdk_invites_our_key_package_and_we_join_and_read_its_messages(mdk: ModuleType, mdk_member: MakeMember) -> None:
    alice, ours = mdk_member("alice"), Ours()
    group, welcome_rumors = alice.create_group([ours.event], name="tea", description="interop")
    (rumor,) = welcome_rumors
    welcome = parse_welcome_rumor(rumor)

    assert welcome.key_package_event_id == ours.event["id"] and welcome.sender == alice.pubkey
    state = mls.join_from_welcome(ours.identity, ours.private, welcome.welcome)
    assert set(mls.member_credentials(state).values()) == {alice.pubkey, ours.pubkey}
    assert state.epoch == group.epoch
    # Our KeyPackage lists SelfRemove among its proposals, as MDK's do, so MDK's group requires it.
    assert alice.mdk.group_required_proposals(group.mls_group_id) == [mdk.MdkProposalType.SELF_REMOVE]

    sent = alice.send(group.mls_group_id, "hello from MDK")
    message = open_group_event(sent, mls.exporter_secret(state, "marmot", b"group-event", 32))
    received = mls.process_message(state, message)
    assert isinstance(received, mls.ApplicationReceived)
    assert received.sender_credential == alice.pubkey
    assert json.loads(received.plaintext)["content"] == "hello from MDK"


def test_mdk_adds_our_key_package_to_its_group_alongside_its_own(mdk_member: MakeMember) -> None:
    alice, bob, ours = mdk_member("alice"), mdk_member("bob"), Ours()
    group, welcome_rumors = alice.create_group([bob.key_package_event(), ours.event])
    by_key_package = {parse_welcome_rumor(rumor).key_package_event_id: rumor for rumor in welcome_rumors}

    state = mls.join_from_welcome(
        ours.identity, ours.private, parse_welcome_rumor(by_key_package[ours.event["id"]]).welcome
    )
    bob.join(next(rumor for event_id, rumor in by_key_package.items() if event_id != ours.event["id"]))
    assert set(mls.member_credentials(state).values()) == {alice.pubkey, bob.pubkey, ours.pubkey}
    sent = bob.send(group.mls_group_id, "from bob")
    received = mls.process_message(state, open_group_event(sent, mls.exporter_secret(state)))
    assert isinstance(received, mls.ApplicationReceived) and received.sender_credential == bob.pubkey


# --- what MDK checks in a KeyPackage event ------------------------------------------------------------


MDK_REFUSES = {
    "no mls_proposals tag": (lambda o: o.retagged("mls_proposals"), "Missing required tag: mls_proposals"),
    "mls_proposals other than 0x000a": (
        lambda o: o.retagged("mls_proposals", "0x000a", "0x0008"),
        "expected 0x000a",
    ),
    "mls_extensions without last_resort": (
        lambda o: o.retagged("mls_extensions", "0xf2ee"),
        r"Missing required extension: 0x000a",
    ),
    "a d tag that is not 64 hex": (lambda o: o.retagged("d", "slot-1"), "exactly 64 hex"),
    "no d tag on kind 30443": (lambda o: o.retagged("d"), "Missing required d tag"),
    "no i tag": (lambda o: o.retagged("i"), "Missing required tag: i"),
    "an i tag of another KeyPackage": (lambda o: o.retagged("i", "00" * 32), "does not match"),
    "no relays": (lambda o: o.retagged("relays"), "Missing required tag: relays"),
    "hex encoding": (
        lambda o: nostr.sign_event(
            {**o.retagged("encoding", "hex"), "content": encode(o.key_package).hex()}, o.secret_key
        ),
        "encoding",
    ),
    "an MLSMessage-wrapped KeyPackage": (
        lambda o: nostr.sign_event(
            {**o.event, "content": base64.b64encode(mls.key_package_to_bytes(o.key_package)).decode()}, o.secret_key
        ),
        "InvalidVectorLength|EndOfStream|UnknownValue",  # a TLS decoding error; which one depends on the bytes
    ),
    "a signer other than the credential": (
        lambda o: nostr.sign_event(o.event, nostr.generate_secret_key()),
        "identity mismatch",
    ),
}


@pytest.mark.parametrize("case", sorted(MDK_REFUSES))
def test_mdk_refuses(mdk: ModuleType, mdk_member: MakeMember, case: str) -> None:
    damage, message = MDK_REFUSES[case]
    with pytest.raises(mdk.MdkUniffiError, match=message):
        mdk_member("alice").mdk.parse_key_package(json.dumps(damage(Ours())))


def test_mdk_reads_the_hex_encoding_and_mlsmessage_forms_that_it_refuses_when_we_write_them_our_way() -> None:
    """The two forms MDK refuses above are ones we still read (MIP-00's hex; the newer MLSMessage framing)."""
    ours = Ours()
    for damage in (MDK_REFUSES["hex encoding"][0], MDK_REFUSES["an MLSMessage-wrapped KeyPackage"][0]):
        assert encode(parse_key_package_event(damage(ours)).key_package) == encode(ours.key_package)


MDK_ACCEPTS_WE_REFUSE = {
    "a wrong event signature": lambda o: {**o.event, "sig": "00" * 64},
    "a repeated mls_extensions tag": lambda o: nostr.sign_event(
        {**o.event, "tags": [*o.event["tags"], ["mls_extensions", "0x000a", "0xf2ee"]]}, o.secret_key
    ),
}


@pytest.mark.parametrize("case", sorted(MDK_ACCEPTS_WE_REFUSE))
def test_mdk_accepts_but_we_refuse(mdk_member: MakeMember, case: str) -> None:
    event = MDK_ACCEPTS_WE_REFUSE[case](Ours())
    mdk_member("alice").mdk.parse_key_package(json.dumps(event))
    with pytest.raises((InvalidKeyPackageEvent, InvalidEvent)):
        parse_key_package_event(event)
