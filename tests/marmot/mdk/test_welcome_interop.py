"""Welcome rumors between MDK 0.8.0 and us, bare and gift-wrapped: each side joins from the other's.

The tests at the end pin what MDK's ``process_welcome`` checks in a rumor
(and what it leaves to the gift wrap, which our unwrap checks).
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable
from types import ModuleType

import attrs
import pytest

from protocols.libraries import mls
from protocols.marmot.processing import rules
from protocols.marmot.wire import group_data, nostr, rumors
from protocols.marmot.wire.gift_wrap import unwrap, wrap
from protocols.marmot.wire.key_package_events import MARMOT_EXTENSIONS, key_package_event, parse_key_package_event
from protocols.marmot.wire.welcome_events import InvalidWelcomeRumor, parse_welcome_rumor, welcome_rumor
from tests.marmot.mdk.mdk_peer import DEFAULT_RELAYS, MdkMember, open_group_event

pytestmark = pytest.mark.peer

MakeMember = Callable[[str], MdkMember]


@attrs.frozen
class Invitation:
    """Our group, just after adding one MDK member: the welcome rumor for it and our state."""

    admin_secret: bytes
    state: mls.GroupState
    rumor: dict


def _invite(member: MdkMember, *, name: str = "ours") -> Invitation:
    """We create a Marmot group and add ``member`` through its published KeyPackage event."""
    admin_secret = nostr.generate_secret_key()
    admin = nostr.public_key_xonly(admin_secret).hex()
    key_package_event = member.key_package_event()
    invitee = parse_key_package_event(key_package_event, now=int(time.time()))
    state = group_data.create_group(
        mls.new_identity(admin), os.urandom(32), os.urandom(32), name=name, relays=list(DEFAULT_RELAYS)
    )
    added = mls.commit(state, add=[invitee.key_package])
    rumor = welcome_rumor(
        added.welcomes[member.pubkey],
        sender_pubkey=admin,
        key_package_event_id=key_package_event["id"],
        relays=DEFAULT_RELAYS,
        created_at=int(time.time()),
    )
    return Invitation(admin_secret, added.new_state, rumor)


def test_mdks_welcome_rumors_parse_with_ours(mdk_member: MakeMember) -> None:
    alice, bob = mdk_member("alice"), mdk_member("bob")
    key_package_event = bob.key_package_event()
    _, (rumor,) = alice.create_group([key_package_event], relays=("wss://one.example", "wss://two.example"))
    parsed = parse_welcome_rumor(rumor)

    assert [tag[0] for tag in rumor["tags"]] == ["relays", "e", "client", "encoding"]
    assert parsed.key_package_event_id == key_package_event["id"]
    assert parsed.relays == ("wss://one.example", "wss://two.example")
    assert parsed.sender == alice.pubkey and parsed.rumor_id == rumor["id"]
    assert parsed.welcome[:4] == b"\x00\x01\x00\x03", "an MLSMessage (mls10) holding a Welcome"


def test_mdk_joins_our_group_from_our_welcome_and_we_read_its_messages(mdk_member: MakeMember) -> None:
    bob = mdk_member("bob")
    invitation = _invite(bob, name="tessera group")
    welcome = bob.join(invitation.rumor)

    assert welcome.group_name == "tessera group" and welcome.member_count == 2
    assert welcome.welcomer == invitation.rumor["pubkey"]
    (group,) = bob.mdk.get_groups()
    assert group.admin_pubkeys == [invitation.rumor["pubkey"]] and group.epoch == invitation.state.epoch
    assert bob.mdk.get_relays(group.mls_group_id) == list(DEFAULT_RELAYS)

    sent = bob.send(group.mls_group_id, "hello from MDK")
    message = open_group_event(sent, mls.exporter_secret(invitation.state))
    received = rules.process_message(invitation.state, message)
    assert isinstance(received, mls.ApplicationReceived) and received.sender_credential == bob.pubkey
    assert json.loads(received.plaintext)["content"] == "hello from MDK"


def test_a_gift_wrapped_welcome_of_ours_is_unwrapped_and_mdk_joins(mdk_member: MakeMember) -> None:
    bob = mdk_member("bob")
    invitation = _invite(bob)
    gift = wrap(invitation.rumor, invitation.admin_secret, bob.pubkey, now=int(time.time()))
    opened = unwrap(gift, bob.secret_key)

    assert opened.rumor == invitation.rumor
    welcome = bob.join(opened.rumor, wrapper_event_id=opened.wrapper_id)
    assert welcome.wrapper_event_id == gift["id"]


def test_mdks_welcome_gift_wrapped_by_its_author_reaches_our_engine(mdk_member: MakeMember) -> None:
    alice = mdk_member("alice")
    secret = nostr.generate_secret_key()
    identity = mls.new_identity(nostr.public_key_xonly(secret).hex())
    key_package, private = mls.create_key_package(identity, supported_extensions=MARMOT_EXTENSIONS)
    ours = nostr.sign_event(key_package_event(key_package, DEFAULT_RELAYS, created_at=int(time.time())), secret)
    _, (rumor,) = alice.create_group([ours])

    gift = wrap(rumor, alice.secret_key, identity.credential, now=int(time.time()))
    opened = unwrap(gift, secret)
    assert opened.sender_pubkey == alice.pubkey
    state = mls.join_from_welcome(identity, private, parse_welcome_rumor(opened.rumor).welcome)
    assert group_data.admins(state) == {alice.pubkey}


# --- what MDK checks in a welcome rumor --------------------------------------------------------------


def _remade(rumor: dict, **changes: object) -> dict:
    fields = {key: rumor[key] for key in ("pubkey", "created_at", "kind", "tags", "content")} | changes
    return rumors.make(
        fields["pubkey"], fields["created_at"], fields["content"], kind=fields["kind"], tags=fields["tags"]
    )


def _without_tag(rumor: dict, name: str) -> dict:
    return _remade(rumor, tags=[tag for tag in rumor["tags"] if tag[0] != name])


def _hex_content(rumor: dict) -> dict:
    tags = [tag if tag[0] != "encoding" else ["encoding", "hex"] for tag in rumor["tags"]]
    return _remade(rumor, tags=tags, content=base64.b64decode(rumor["content"]).hex())


MDK_REFUSES = {
    "no e tag": (lambda r: _without_tag(r, "e"), "invalid welcome message"),
    "no relays tag": (lambda r: _without_tag(r, "relays"), "invalid welcome message"),
    "no encoding tag": (lambda r: _without_tag(r, "encoding"), "invalid welcome message"),
    "hex content": (_hex_content, "invalid welcome message"),
    "another kind": (lambda r: _remade(r, kind=445), "invalid welcome message"),
    "no id": (lambda r: {k: v for k, v in r.items() if k != "id"}, "missing its ID"),
}


@pytest.mark.parametrize("case", sorted(MDK_REFUSES))
def test_mdk_refuses(mdk: ModuleType, mdk_member: MakeMember, case: str) -> None:
    damage, message = MDK_REFUSES[case]
    bob = mdk_member("bob")
    with pytest.raises(mdk.MdkUniffiError, match=message):
        bob.mdk.process_welcome(os.urandom(32).hex(), json.dumps(damage(_invite(bob).rumor)))


def test_mdk_refuses_hex_content_and_no_encoding_tag_that_mip02_allows_and_we_read(mdk_member: MakeMember) -> None:
    rumor = _invite(mdk_member("bob")).rumor
    for damage in (MDK_REFUSES["no encoding tag"][0], MDK_REFUSES["hex content"][0]):
        assert parse_welcome_rumor(damage(rumor)).welcome == base64.b64decode(rumor["content"])


MDK_ACCEPTS_WE_REFUSE = {
    "a wrong id": lambda r: {**r, "id": "00" * 32},
    "a signature": lambda r: {**r, "sig": "00" * 64},
}


@pytest.mark.parametrize("case", sorted(MDK_ACCEPTS_WE_REFUSE))
def test_mdk_accepts_but_we_refuse(mdk_member: MakeMember, case: str) -> None:
    bob = mdk_member("bob")
    rumor = MDK_ACCEPTS_WE_REFUSE[case](_invite(bob).rumor)
    bob.mdk.process_welcome(os.urandom(32).hex(), json.dumps(rumor))
    with pytest.raises(InvalidWelcomeRumor):
        parse_welcome_rumor(rumor)


def test_mdk_takes_the_rumors_pubkey_as_the_welcomer_unchecked(mdk_member: MakeMember) -> None:
    """MDK trusts the rumor's pubkey; only the seal proves it, and our unwrap refuses a rumor its sealer did not write."""
    bob = mdk_member("bob")
    impostor = nostr.public_key_xonly(nostr.generate_secret_key()).hex()
    rumor = _remade(_invite(bob).rumor, pubkey=impostor)
    assert bob.mdk.process_welcome(os.urandom(32).hex(), json.dumps(rumor)).welcomer == impostor


def test_mdk_does_not_check_the_e_tag_against_its_key_packages(mdk_member: MakeMember) -> None:
    bob = mdk_member("bob")
    rumor = _invite(bob).rumor
    tags = [tag if tag[0] != "e" else ["e", "00" * 32] for tag in rumor["tags"]]
    assert bob.mdk.process_welcome(os.urandom(32).hex(), json.dumps(_remade(rumor, tags=tags))).member_count == 2
