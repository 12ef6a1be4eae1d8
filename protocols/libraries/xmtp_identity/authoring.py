"""Writing identity updates: the ones an XMTP client publishes to create its inbox and add installations.

libxmtp v1.10.0 (``Identity::new`` in crates/xmtp_mls/src/identity.rs, with the
``SignatureRequestBuilder`` of crates/xmtp_id/src/associations/builder.rs)
registers a new inbox with ONE update of two actions: ``CreateInbox`` (the
account's address and a nonce, signed by the account) and ``AddAssociation``
of the installation key (the new member's signature by the installation, the
existing member's by the account).  Every signature signs the same text
(:func:`~.signature_text.signature_text`), so the account signs once and its
signature fills both places.  A second installation is one ``AddAssociation``
signed the same way.  The checks in :mod:`.associations` accept what this
module writes; the tests prove it against libxmtp too.
"""

from __future__ import annotations

import time

import attrs

from protocols.libraries.xmtp_wire.proto import associations_pb2

from .ethereum import account_address, personal_sign
from .identifiers import ETHEREUM, Identifier, inbox_id_for
from .installation import installation_public_key, sign_installation
from .signature_text import signature_text


@attrs.frozen
class Account:
    """An Ethereum account that owns an inbox: its secp256k1 key signs with EIP-191 as a wallet does.

    Attributes:
        private_key: the 32-byte secp256k1 secret (hidden from repr).
    """

    private_key: bytes = attrs.field(repr=False)

    @property
    def address(self) -> str:
        """The account's lowercase ``0x`` address: the inbox's identifier."""
        return account_address(self.private_key)

    @property
    def identifier(self) -> Identifier:
        return Identifier(ETHEREUM, self.address)

    def inbox_id(self, nonce: int = 0) -> str:
        """The inbox id libxmtp derives for this account and ``nonce``."""
        return inbox_id_for(self.identifier, nonce)


def create_inbox_update(
    account: Account, installation_seed: bytes, *, nonce: int = 0, now_ns: int | None = None
) -> associations_pb2.IdentityUpdate:
    """The update that creates ``account``'s inbox (with ``nonce``) and adds the installation of ``installation_seed``."""
    inbox_id = account.inbox_id(nonce)
    update = associations_pb2.IdentityUpdate(inbox_id=inbox_id, client_timestamp_ns=_now_ns(now_ns))
    create = update.actions.add().create_inbox
    create.initial_identifier = account.address
    create.initial_identifier_kind = ETHEREUM
    create.nonce = nonce
    _add_installation_action(update, installation_seed)
    return _signed(update, account, installation_seed)


def add_installation_update(
    account: Account, inbox_id: str, installation_seed: bytes, *, now_ns: int | None = None
) -> associations_pb2.IdentityUpdate:
    """The update that adds another installation to ``inbox_id``, vouched for by ``account`` (a member of it)."""
    update = associations_pb2.IdentityUpdate(inbox_id=inbox_id, client_timestamp_ns=_now_ns(now_ns))
    _add_installation_action(update, installation_seed)
    return _signed(update, account, installation_seed)


def _now_ns(now_ns: int | None) -> int:
    return time.time_ns() if now_ns is None else now_ns


def _add_installation_action(update: associations_pb2.IdentityUpdate, installation_seed: bytes) -> None:
    add = update.actions.add().add
    add.new_member_identifier.installation_public_key = installation_public_key(installation_seed)


def _signed(
    update: associations_pb2.IdentityUpdate, account: Account, installation_seed: bytes
) -> associations_pb2.IdentityUpdate:
    """``update`` with every signature slot filled: the account's EIP-191 and the installation's Ed25519ph."""
    text = signature_text(update)
    account_signature = personal_sign(account.private_key, text)
    installation_signature = sign_installation(installation_seed, text)
    public_key = installation_public_key(installation_seed)
    for action in update.actions:
        kind = action.WhichOneof("kind")
        if kind == "create_inbox":
            action.create_inbox.initial_identifier_signature.erc_191.bytes = account_signature
        elif kind == "add":
            action.add.existing_member_signature.erc_191.bytes = account_signature
            installation = action.add.new_member_signature.installation_key
            installation.bytes = installation_signature
            installation.public_key = public_key
    return update
