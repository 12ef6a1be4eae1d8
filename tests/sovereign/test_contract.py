"""The projector test kit on the sovereign plugin, and a stateful test of delivery states."""

from __future__ import annotations

import os

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from projectors.testkit import ProjectorContract, Run
from protocols import sovereign
from protocols.libraries.delivery.records import DELIVERED, PENDING, READ
from protocols.libraries.mls.messages.framing import ContentType
from protocols.sovereign.config import Limits
from protocols.sovereign.xmtp_node import commands as xmtp
from tests.sovereign.mls_group import Group, Member
from tests.sovereign.server_helpers import private_message, welcome
from tests.xmtp_identity import forge

KIT_NOW_S = 1_700_000_000  # the kit's manual clock: KeyPackages must be valid then


class TestSovereignContract(ProjectorContract):
    plugins = (sovereign,)
    protocols = ("sovereign",)

    def items(self):
        group = Group(3)
        alice, bob, carol = group.members
        gid = group.gid
        items = [Run("sovereign.join", {"installation": alice.installation, "group_id": gid})]
        for member in (bob, carol):
            welcome = group.welcomes[member.installation]
            items += [
                Run(
                    "sovereign.store",
                    {
                        "sender": alice.installation,
                        "group_id": gid,
                        "payload": welcome,
                        "recipient": member.installation,
                    },
                ),
                Run("sovereign.join", {"installation": member.installation, "group_id": gid}),
            ]
        for n in range(12):
            sender = (alice, bob, carol)[n % 3]
            items.append(
                Run(
                    "sovereign.store",
                    {"sender": sender.installation, "group_id": gid, "payload": group.application(sender, str(n))},
                )
            )
        stale = group.stale_commit(bob)
        items += [
            Run("sovereign.store", {"sender": alice.installation, "group_id": gid, "payload": group.commit()}),
            Run("sovereign.store", {"sender": bob.installation, "group_id": gid, "payload": stale}),
            Run("sovereign.leave", {"installation": carol.installation, "group_id": gid}),
            Run(
                "sovereign.store",
                {"sender": bob.installation, "group_id": gid, "payload": group.application(bob, "late")},
            ),
        ]
        publisher = Member()
        packages = [publisher.key_package(now=KIT_NOW_S)[0] for _ in range(2)]
        items.append(
            Run("sovereign.key_package_publish", {"installation": publisher.installation, "key_packages": packages})
        )
        return items + identity_items(alice.installation, bob.installation, carol.installation) + xmtp_node_items()


def xmtp_node_items() -> list[Run]:
    """The XMTP node's facts: group messages in two groups (commits among them, a retry), welcomes and a pointer,
    key packages (a later one replacing), identity updates moving an address between inboxes, commit logs,
    and retention removing some of them."""
    limits = Limits(max_app_messages_per_group_per_day=0)
    groups = [os.urandom(16), os.urandom(16)]

    def messages(group: bytes, count: int, *, commit: bool = False) -> list[xmtp.GroupMessageInput]:
        made = []
        for epoch in range(count):
            data = private_message(
                group.hex(), epoch=epoch, content_type=ContentType.COMMIT if commit else ContentType.APPLICATION
            )
            made.append(xmtp.GroupMessageInput(group, epoch, commit, data, b"hmac", True))
        return made

    first = messages(groups[0], 5)
    items = [
        Run("sovereign.xmtp_send_group_messages", {"messages": first, "limits": limits}),
        Run("sovereign.xmtp_send_group_messages", {"messages": messages(groups[1], 2, commit=True), "limits": limits}),
        Run("sovereign.xmtp_send_group_messages", {"messages": first[:2], "limits": limits}),  # a retry
    ]
    invitee = os.urandom(32)
    welcomes = [
        xmtp.WelcomeInput(invitee, xmtp.WELCOME, welcome(), b"hpke", 1, b"metadata"),
        xmtp.WelcomeInput(invitee, xmtp.WELCOME_POINTER, os.urandom(64), b"hpke", 2, b""),
    ]
    items.append(Run("sovereign.xmtp_send_welcomes", {"welcomes": welcomes, "limits": limits}))
    installation_key = os.urandom(32)
    for package in (b"first package", b"second package"):
        params = {"installation_key": installation_key, "inbox_id": "ab" * 32, "key_package": package, "not_after": 9}
        items.append(Run("sovereign.xmtp_upload_key_package", params))
    wallet, other = forge.Wallet(), forge.Wallet()
    installation = forge.Installation()
    create = forge.signed_update(
        forge.inbox_of(wallet),
        forge.create_inbox(wallet),
        forge.add(installation.member(), wallet.sign, installation.sign),
    )
    create_other = forge.signed_update(forge.inbox_of(other), forge.create_inbox(other))
    # the first wallet is added to the other inbox too (latest wins), then revoked from its own
    claim = forge.signed_update(forge.inbox_of(other), forge.add(wallet.member(), other.sign, wallet.sign))
    for update in (create, create_other, claim, create):  # the last: a retry, stored once
        items.append(
            Run(
                "sovereign.xmtp_publish_identity_update",
                {"update": update, "raw": update.SerializeToString(deterministic=True)},
            )
        )
    entries = [(groups[0], bytes([n]), b"signature") for n in range(3)]
    items.append(Run("sovereign.xmtp_publish_commit_log", {"entries": entries}))
    items += [
        Run("sovereign.xmtp_expire", {"kind": "group_messages", "ids": [1, 2, 6]}),
        Run("sovereign.xmtp_expire", {"kind": "welcomes", "ids": [1]}),
    ]
    return items


def identity_items(first: str, second: str, other: str) -> list[Run]:
    """Bindings published, replaced, published again unchanged, and an earlier one published again (A, B, A)."""
    account, another = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0x" + "12" * 20

    def publish(installation: str, address: str, binding: bytes) -> Run:
        return Run("sovereign.identity_publish", {"installation": installation, "address": address, "binding": binding})

    return [
        publish(first, account, b"A"),
        publish(second, account.lower(), b"second's"),
        publish(first, account, b"B"),
        publish(first, account, b"B"),
        publish(first, account, b"A"),
        publish(other, another, b"other's"),
    ]


class DeliveryStates(RuleBasedStateMachine):
    """Random sends, acks, reads and membership changes; each delivery only moves forward, each member is
    pending exactly what it was sent while a member and has not acknowledged, in server order."""

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[tuple[str, str], int] = {}  # (message id, recipient) -> status

    @initialize()
    def open_store(self) -> None:
        import tempfile
        import time
        from pathlib import Path

        from core.clock import ManualClock
        from core.settings import Settings
        from protocols.sovereign.service import Store
        from tests.helpers import open_test_app
        from tests.sovereign.conftest import seat

        self.tmp = tempfile.TemporaryDirectory()
        self.app = open_test_app(
            str(Path(self.tmp.name) / "s.db"),
            Settings.load(env={}),
            [sovereign],
            ["sovereign"],
            clock=ManualClock(int(time.time() * 1000)),
        )
        self.store = Store(self.app)
        self.group = Group(4)
        seat(self.store, self.group)
        self.members = {m.installation for m in self.group.members}
        self.model = {}

    def teardown(self) -> None:
        if hasattr(self, "app"):
            self.app.close()
            self.tmp.cleanup()

    @rule(who=st.integers(0, 3))
    def send(self, who: int) -> None:
        member = self.group.members[who]
        if member.installation not in self.members:
            return
        stored = self.store.send(member.installation, self.group.gid, self.group.application(member))
        assert set(stored.recipients) == self.members - {member.installation}
        for recipient in stored.recipients:
            self.model[(stored.message.id, recipient)] = PENDING

    @rule(
        who=st.integers(0, 3),
        status=st.sampled_from([DELIVERED, READ]),
        picks=st.lists(st.integers(0, 10_000), max_size=6),
    )
    def mark(self, who: int, status: int, picks: list[int]) -> None:
        installation = self.group.members[who].installation
        ids = sorted({message_id for message_id, _ in self.model})
        chosen = [ids[p % len(ids)] for p in picks] if ids else []
        moved = (self.store.ack if status == DELIVERED else self.store.read)(installation, chosen)
        expected = 0
        for message_id in set(chosen):
            key = (message_id, installation)
            if key in self.model and self.model[key] < status:
                self.model[key] = status
                expected += 1
        assert moved == expected

    @rule(who=st.integers(1, 3))
    def leave(self, who: int) -> None:
        installation = self.group.members[who].installation
        self.store.leave(installation, self.group.gid)
        self.members.discard(installation)

    @invariant()
    def stored_states_match_the_model(self) -> None:
        if not hasattr(self, "store"):
            return
        rows = self.app.db.all(
            "SELECT d.message_id, d.recipient_id, d.status FROM sovereign_delivery_status AS d "
            "JOIN sovereign_messages AS m ON m.id = d.message_id WHERE m.message_type = 0"
        )
        assert {(m, r): s for m, r, s in rows} == self.model
        for installation in {r for _, r in self.model}:
            pending = [m.id for m in self.store.pending(installation) if m.message_type == 0]
            assert pending == sorted(m for (m, r), s in self.model.items() if r == installation and s == PENDING)


DeliveryStates.TestCase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
TestDeliveryStates = DeliveryStates.TestCase
