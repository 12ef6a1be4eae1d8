"""Who a node-profile database is: an account, its inbox, this installation of it, and the node it talks to."""

from __future__ import annotations

import json

import attrs

from protocols.libraries.xmtp_identity.authoring import Account
from protocols.libraries.xmtp_identity.installation import installation_public_key
from protocols.xmtp.identity import checksum_address

#: The inbox of an account that libxmtp creates first (its nonce); other nonces are other inboxes.
FIRST_NONCE = 0


@attrs.frozen
class Inbox:
    """This database as an XMTP client.

    Attributes:
        account_key: the account's secp256k1 secret (32 bytes, hidden from repr): it owns the inbox.
        installation_seed: this installation's Ed25519 seed (hidden from repr): its leaf and signing key.
        inbox_id: the inbox, derived from the account's address and the nonce as libxmtp derives it.
        node: the XMTP node's URL (``http(s)://host:port``).
        joins_existing: the inbox existed before this database: it registers by adding this installation
            (``identity add-installation``), not by creating the inbox.
    """

    account_key: bytes = attrs.field(repr=False)
    installation_seed: bytes = attrs.field(repr=False)
    inbox_id: str
    node: str
    joins_existing: bool = False

    @property
    def account(self) -> Account:
        return Account(self.account_key)

    @property
    def address(self) -> str:
        """The account's address with its EIP-55 checksum."""
        return checksum_address(bytes.fromhex(self.account.address[2:]))

    @property
    def installation_key(self) -> bytes:
        """The installation's public Ed25519 key: its id, where libxmtp sends its welcomes."""
        return installation_public_key(self.installation_seed)

    @property
    def installation_id(self) -> str:
        return self.installation_key.hex()

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "account": self.account_key.hex(),
                "installation": self.installation_seed.hex(),
                "inbox_id": self.inbox_id,
                "node": self.node,
                "joins_existing": self.joins_existing,
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Inbox:
        fields = json.loads(data)
        return cls(
            bytes.fromhex(fields["account"]),
            bytes.fromhex(fields["installation"]),
            fields["inbox_id"],
            fields["node"],
            bool(fields["joins_existing"]),
        )
