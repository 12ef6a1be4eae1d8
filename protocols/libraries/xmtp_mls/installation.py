"""An XMTP installation of an inbox: its keys, its registration on a node, and joining the groups it is welcomed to.

The account (an Ethereum key) owns the inbox; the installation key (Ed25519)
is this app's member key: it signs identity updates, it is the leaf signature
key of every KeyPackage and group leaf, and its public half is the
installation id libxmtp addresses welcomes to.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import attrs

from protocols.libraries import mls
from protocols.libraries.mls.errors import MlsError
from protocols.libraries.xmtp_identity.authoring import Account, add_installation_update, create_inbox_update
from protocols.libraries.xmtp_identity.installation import installation_public_key
from protocols.libraries.xmtp_wire.proto import mls_api_pb2

from .context import group_context
from .errors import XmtpMlsError
from .groups import JoinedGroup
from .key_packages import installation_identity, new_key_package
from .membership import IdentityUpdates, verify_members
from .node import XmtpNode
from .profile import MAX_PAST_EPOCHS
from .welcomes import open_welcome


@attrs.define
class Installation:
    """One installation and the KeyPackages it can still join with.

    Attributes:
        account: the inbox's account key (hidden from repr).
        seed: the installation's Ed25519 seed (hidden from repr).
        inbox_id: the inbox it belongs to.
        key_packages: the KeyPackages it published, with their private keys.
        welcome_cursor: the id of the last welcome read from the node.
    """

    account: Account = attrs.field(repr=False)
    seed: bytes = attrs.field(repr=False)
    inbox_id: str
    key_packages: list[mls.KeyPackagePrivate] = attrs.Factory(list)
    welcome_cursor: int = 0

    @classmethod
    def new(cls, account: Account | None = None, *, nonce: int = 0) -> Installation:
        """A fresh installation key for ``account`` (a fresh account when none), in the inbox of ``nonce``."""
        account = account or Account(os.urandom(32))
        return cls(account, os.urandom(32), account.inbox_id(nonce))

    @property
    def installation_key(self) -> bytes:
        """The installation's public Ed25519 key: its id, and where libxmtp sends its welcomes."""
        return installation_public_key(self.seed)

    def register(self, node: XmtpNode, *, nonce: int = 0) -> None:
        """Publish the update that creates the inbox with this installation, then a KeyPackage."""
        node.publish_identity_update(create_inbox_update(self.account, self.seed, nonce=nonce))
        self.publish_key_package(node)

    def register_as_another_installation(self, node: XmtpNode) -> None:
        """Publish the update adding this installation to an inbox the account already has, then a KeyPackage."""
        node.publish_identity_update(add_installation_update(self.account, self.inbox_id, self.seed))
        self.publish_key_package(node)

    def publish_key_package(self, node: XmtpNode) -> None:
        key_package, private = new_key_package(self.seed, self.inbox_id)
        node.upload_key_package(key_package)
        self.key_packages.append(private)

    def join_welcomed_groups(self, node: XmtpNode) -> list[JoinedGroup]:
        """Every group whose welcome arrived for this installation since the last call, joined.

        The Welcome is checked as RFC 9420 says (signatures, tree, our KeyPackage); then the group's
        context must carry libxmtp's four extensions (:class:`~.errors.InvalidGroupContext`), and every
        member's inbox be in its membership map with an installation key its identity updates list up to
        the recorded sequence id (:class:`~.errors.UnverifiedMember`).  A refused welcome raises once,
        from a call that joined nothing before it (an earlier call returns the groups it joined and
        stops there); the welcome cursor then moves past it, so the next call goes on with the rest."""
        joined: list[JoinedGroup] = []
        for message in node.welcomes(self.installation_key, after=self.welcome_cursor):
            read_to = welcome_id(message)
            try:
                group = self.join_welcome(message, node)
            except (XmtpMlsError, MlsError):
                if joined:
                    return joined
                self.welcome_cursor = read_to
                raise
            self.welcome_cursor = read_to
            joined.append(group)
        return joined

    def join_welcome(self, message: mls_api_pb2.WelcomeMessage, updates: IdentityUpdates) -> JoinedGroup:
        """The group one stored welcome brings, checked (see :meth:`join_welcomed_groups`); no network:
        members are checked against ``updates`` (the node, or a copy of its identity updates;
        :class:`~.errors.IdentityUpdatesBehind` when the copy is behind what the group records).  The
        KeyPackage it used stays in :attr:`key_packages`: forgetting it is the caller's, once the group is kept."""
        return join_welcome(self.seed, self.inbox_id, self.key_packages, message, updates)


def join_welcome(
    seed: bytes,
    inbox_id: str,
    key_packages: Sequence[mls.KeyPackagePrivate],
    message: mls_api_pb2.WelcomeMessage,
    updates: IdentityUpdates,
) -> JoinedGroup:
    """The group ``message`` welcomes the installation of ``seed`` (of ``inbox_id``) to, with the KeyPackage it
    was sealed to among ``key_packages``: the Welcome checked as RFC 9420 says, the group's context as libxmtp
    has it, every member against its inbox's identity updates in ``updates``."""
    opened = open_welcome(message, key_packages)
    identity = installation_identity(seed, inbox_id)
    state = mls.join_from_welcome(identity, opened.key_package, opened.welcome, max_past_epochs=MAX_PAST_EPOCHS)
    verify_members(updates, state, group_context(state).membership.members)
    # reading starts after the commit that added us when the sender said which it was (libxmtp does)
    return JoinedGroup(state, joined_epoch=state.epoch, cursor=opened.message_cursor or 0)


def welcome_id(message: mls_api_pb2.WelcomeMessage) -> int:
    """The node's id of a stored welcome (its place in the installation's welcome stream)."""
    return int(message.v1.id if message.WhichOneof("version") == "v1" else message.welcome_pointer.id)
