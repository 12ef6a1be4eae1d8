"""What real libxmtp clients upload to a node, captured through the in-memory ceiling node.

:func:`capture` runs one scenario with real clients (two inboxes, a second
installation of one, a linked second address, a group with messages both ways,
a revocation and a recovery change) and returns every key package, identity
update, group message and welcome they sent, as bytes.  The live tests call it
directly; ``python -m tests.xmtp_identity.record`` writes it to
``data/captured.json`` so the hostile and property tests run without a peer.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import attrs

from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import LibxmtpClient

RECORDED = Path(__file__).with_name("data") / "captured.json"
#: The nonces whose inbox ids libxmtp is asked to derive for each account (0 is what every client uses).
NONCES = (0, 1, 7, 2**63)


@attrs.frozen
class Captured:
    """Everything real clients uploaded in one scenario.

    Attributes:
        captured_at: when, in seconds since the epoch (key packages' lifetimes are checked against it).
        key_packages: the newest uploaded KeyPackage of each installation, TLS-serialised as uploaded.
        identity_updates: ``(inbox_id, serialized IdentityUpdate)`` in the order they were published.
        group_messages: the ``data`` of every sent group message, in server order.
        welcomes: the ``data`` of every sent v1 welcome.
        derived_inbox_ids: ``(address, nonce, inbox id)`` as libxmtp derives them.
        installations: ``inbox id -> installation ids (hex)`` the clients hold at the end.
    """

    captured_at: int
    key_packages: tuple[bytes, ...]
    identity_updates: tuple[tuple[str, bytes], ...]
    group_messages: tuple[bytes, ...]
    welcomes: tuple[bytes, ...]
    derived_inbox_ids: tuple[tuple[str, int, str], ...]
    installations: dict[str, tuple[str, ...]]

    def to_json(self) -> str:
        return json.dumps(
            {
                "captured_at": self.captured_at,
                "key_packages": [data.hex() for data in self.key_packages],
                "identity_updates": [[inbox, data.hex()] for inbox, data in self.identity_updates],
                "group_messages": [data.hex() for data in self.group_messages],
                "welcomes": [data.hex() for data in self.welcomes],
                "derived_inbox_ids": [list(entry) for entry in self.derived_inbox_ids],
                "installations": {inbox: list(ids) for inbox, ids in self.installations.items()},
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> Captured:
        raw = json.loads(text)
        return cls(
            captured_at=raw["captured_at"],
            key_packages=tuple(bytes.fromhex(data) for data in raw["key_packages"]),
            identity_updates=tuple((inbox, bytes.fromhex(data)) for inbox, data in raw["identity_updates"]),
            group_messages=tuple(bytes.fromhex(data) for data in raw["group_messages"]),
            welcomes=tuple(bytes.fromhex(data) for data in raw["welcomes"]),
            derived_inbox_ids=tuple((address, nonce, inbox) for address, nonce, inbox in raw["derived_inbox_ids"]),
            installations={inbox: tuple(ids) for inbox, ids in raw["installations"].items()},
        )


def capture(make_client: Callable[[str], LibxmtpClient], node: CeilingNode) -> Captured:
    """Run the scenario with real clients through ``node`` and collect what they uploaded."""
    alice = make_client("alice").create(node.url)
    bob = make_client("bob").create(node.url)
    bob_again = make_client("bob-again").create(node.url, private_key=bob.private_key)
    alice_second_key = os.urandom(32).hex()
    alice_second_address = alice.call("link_address", private_key=alice_second_key)
    group = alice.create_group([bob], name="captured")
    alice.send_text(group, "hello bob")
    bob.call("sync_welcomes")
    bob.call("sync_group", group_id=group)
    bob.send_text(group, "hello alice")
    dm = bob.create_dm(alice)
    bob.send_text(dm, "a direct word")
    bob.call("revoke_installations", installation_ids=[bob_again.installation_id])
    alice.call("change_recovery", address=alice_second_address)
    derived = tuple(
        (address, nonce, alice.call("generate_inbox_id", address=address, nonce=nonce))
        for address in (alice.address, bob.address, alice_second_address)
        for nonce in NONCES
    )
    installations = {
        inbox: tuple(sorted(alice.call("installations", inbox_id=inbox))) for inbox in (alice.inbox_id, bob.inbox_id)
    }
    return _collect(node, derived, installations)


def _collect(
    node: CeilingNode, derived: tuple[tuple[str, int, str], ...], installations: dict[str, tuple[str, ...]]
) -> Captured:
    memory = node.memory
    logs = sorted(
        (
            (log.sequence_id, inbox, log.update.SerializeToString())
            for inbox, entries in memory.identity_updates.items()
            for log in entries
        )
    )
    messages = sorted((stored.v1.id, stored.v1.data) for topic in memory.groups.values() for stored in topic.stored)
    welcomes = [
        stored.v1.data
        for topic in memory.welcomes.values()
        for stored in topic.stored
        if stored.WhichOneof("version") == "v1"
    ]
    return Captured(
        captured_at=int(time.time()),
        key_packages=tuple(memory.key_packages.values()),
        identity_updates=tuple((inbox, data) for _, inbox, data in logs),
        group_messages=tuple(data for _, data in messages),
        welcomes=tuple(welcomes),
        derived_inbox_ids=derived,
        installations=installations,
    )


def recorded() -> Captured:
    """The scenario as last recorded in ``data/captured.json``."""
    return Captured.from_json(RECORDED.read_text())
