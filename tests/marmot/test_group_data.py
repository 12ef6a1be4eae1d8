"""Marmot's group data extension (0xF2EE) and the admin rule it carries."""

from __future__ import annotations

import attrs
import pytest

from protocols.libraries import mls
from protocols.libraries.mls.codec import encode
from protocols.marmot.processing import rules
from protocols.marmot.wire import group_data
from protocols.marmot.wire.group_data import CURRENT_VERSION, GroupData, InvalidGroupData
from tests.marmot._net import T0, Net
from tests.marmot._read import group_row, outer_record
from tests.marmot.conftest import deliver

# 0xF2EE as MDK 0.8.0 wrote it in a group it created (name "probe", description "desc", one admin,
# one relay, no image), read from the GroupContext after joining that group from MDK's Welcome.
MDK_0_8_0_GROUP_DATA = bytes.fromhex(
    "00025b47dd9f8a24bdb73bf80d0d3dbaa6bd20868e2334a39b2c8d653ebd6131dc570570726f62650464657363"
    "204675233bc7f72b51c488d703cbc693cf0db408c587808ef021d646d444704403141377733a2f2f3132372e30"
    "2e302e313a3737373700000000"
)


def test_the_extension_round_trips_and_names_the_admins() -> None:
    net = Net(3)
    state = net.states[0]
    data = group_data.read(state)
    assert (data.version, data.nostr_group_id_hex) == (CURRENT_VERSION, net.ngid)
    assert data.nostr_group_id_hex != net.gid  # the MLS group id is never the one on relays
    assert group_data.admins(state) == {net.cred(0)}
    assert GroupData.from_bytes(data.to_bytes()) == data
    assert group_data.GROUP_DATA_EXTENSION in state.own_leaf_node.capabilities.extensions


def test_mdk_group_data_decodes_and_encodes_to_the_same_bytes() -> None:
    data = GroupData.from_bytes(MDK_0_8_0_GROUP_DATA)
    assert (data.version, data.name, data.description) == (2, "probe", "desc")
    assert data.nostr_group_id_hex == "5b47dd9f8a24bdb73bf80d0d3dbaa6bd20868e2334a39b2c8d653ebd6131dc57"
    assert data.admins == ("4675233bc7f72b51c488d703cbc693cf0db408c587808ef021d646d444704403",)
    assert data.relays == ("ws://127.0.0.1:7777",)
    assert data.image_hash is data.image_key is data.image_nonce is data.image_upload_key is None
    assert data.to_bytes() == MDK_0_8_0_GROUP_DATA


def _older_layout(layout, data: GroupData, version: int) -> bytes:
    image = [data.image_hash or b"", data.image_key or b"", data.image_nonce or b""]
    if layout is group_data._HexAdmins:
        image.append(data.image_upload_key or b"")
    return encode(
        layout(
            version,
            data.nostr_group_id,
            data.name.encode(),
            data.description.encode(),
            tuple(admin.encode() for admin in data.admins),
            tuple(url.encode() for url in data.relays),
            *image,
        )
    )


@pytest.mark.parametrize(("layout", "version"), [("_HexAdmins", 2), ("_Version1", 1)])
def test_older_layouts_with_hex_admin_keys_decode(layout: str, version: int) -> None:
    data = GroupData(
        bytes(range(32)),
        "chat",
        "",
        ("ab" * 32, "cd" * 32),
        ("wss://relay.example", "ws://127.0.0.1:7777"),
        image_hash=b"\x01" * 32,
        image_key=b"\x02" * 32,
        image_nonce=b"\x03" * 12,
    )
    old = GroupData.from_bytes(_older_layout(getattr(group_data, layout), data, version))
    assert old == attrs.evolve(data, version=version)
    assert GroupData.from_bytes(old.replace().to_bytes()) == data  # written back in the current layout


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda b: b[:-1], "matches no known layout"),
        (lambda b: b + b"\x00", "matches no known layout"),
        (lambda b: b"\x00\x00" + b[2:], "version 0"),
        (lambda b: b[:34] + b"\x02\xff\xfe" + b[40:], "not UTF-8"),
    ],
)
def test_damaged_group_data_is_refused_with_the_reason(damage, match: str) -> None:
    with pytest.raises(InvalidGroupData, match=match):
        GroupData.from_bytes(damage(MDK_0_8_0_GROUP_DATA))


def test_group_data_refuses_values_no_client_could_use() -> None:
    with pytest.raises(InvalidGroupData, match="32 bytes"):
        GroupData(b"short")
    with pytest.raises(InvalidGroupData, match="hex public key"):
        GroupData(bytes(32), admins=("npub1notahexkey",))
    with pytest.raises(InvalidGroupData, match="ws:// or wss://"):
        GroupData(bytes(32), relays=("https://relay.example",))
    with pytest.raises(InvalidGroupData, match="image_nonce must be 12 bytes"):
        GroupData(bytes(32), image_nonce=bytes(32))


def test_every_member_must_support_it_to_be_added() -> None:
    net = Net(2)
    outsider = mls.new_identity("ab" * 32)
    package, _ = mls.create_key_package(outsider)  # no 0xF2EE in its capabilities
    with pytest.raises(mls.InvalidMessage):
        mls.commit(net.states[0], add=[package])


def test_an_admin_change_is_a_commit_every_member_follows() -> None:
    net = Net(3)
    extensions = group_data.with_admins(net.states[0], {net.cred(0), net.cred(2)})
    net.adopt(0, mls.commit(net.states[0], extensions=extensions))
    assert all(group_data.admins(state) == {net.cred(0), net.cred(2)} for state in net.states.values())


def test_a_non_admin_may_commit_a_self_update() -> None:
    net = Net(3)
    result = mls.commit(net.states[1], self_update=True)
    applied = rules.process_message(net.states[0], result.message)
    assert isinstance(applied, mls.CommitApplied) and rules.is_pure_self_update(applied)


def test_a_non_admin_commit_that_changes_the_group_is_refused() -> None:
    net = Net(3)
    result = mls.commit(net.states[1], remove=[net.cred(2)])
    with pytest.raises(mls.UnauthorizedCommit, match="not an admin"):
        rules.process_message(net.states[0], result.message)


def test_the_plugin_records_a_non_admin_commit_as_unauthorized(app, net) -> None:
    before = group_row(app, net.gid)
    line, _result = net.prepare(1, T0 + 1, remove=[net.cred(2)])
    deliver(app, line)
    record = outer_record(app, net.gid, line)
    assert (record.state, record.reason) == ("Failed", "unauthorized_commit")
    assert group_row(app, net.gid)["epoch"] == before["epoch"]
