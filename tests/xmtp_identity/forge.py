"""Keys that sign XMTP identity updates the way libxmtp's wallets and installations do, for hostile tests.

A :class:`Wallet` signs with EIP-191 ``personal_sign`` (secp256k1, ``v`` 27/28);
an :class:`Installation` signs with Ed25519ph under libxmtp's identity-update
context.  :func:`signed_update` builds an update from actions and fills in each
signature over the update's own text, so a test can forge exactly one thing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable

import attrs
import coincurve
from Crypto.Hash import SHA512
from Crypto.PublicKey import ECC
from Crypto.Signature import eddsa
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from protocols.libraries.xmtp_identity import ETHEREUM, Identifier, inbox_id_for, signature_text
from protocols.libraries.xmtp_identity.ethereum import address_of, personal_sign_hash
from protocols.libraries.xmtp_identity.installation import IDENTITY_UPDATE_CONTEXT
from protocols.libraries.xmtp_identity.signatures import LEGACY_KEY_TEXT
from protocols.libraries.xmtp_wire.proto import associations_pb2 as pb
from protocols.libraries.xmtp_wire.proto import legacy_keys_pb2, legacy_public_key_pb2

Signer = Callable[[str], pb.Signature]


@attrs.frozen
class Wallet:
    """An Ethereum account key."""

    secret: bytes = attrs.Factory(lambda: os.urandom(32))

    @property
    def address(self) -> str:
        return address_of(coincurve.PrivateKey(self.secret).public_key.format())

    @property
    def identifier(self) -> Identifier:
        return Identifier(ETHEREUM, self.address)

    def member(self) -> pb.MemberIdentifier:
        return pb.MemberIdentifier(ethereum_address=self.address)

    def sign(self, text: str) -> pb.Signature:
        compact = coincurve.PrivateKey(self.secret).sign_recoverable(personal_sign_hash(text), hasher=None)
        return pb.Signature(erc_191=pb.RecoverableEcdsaSignature(bytes=compact[:64] + bytes([27 + compact[64]])))


@attrs.frozen
class Installation:
    """An installation's Ed25519 key."""

    key: ECC.EccKey = attrs.Factory(lambda: ECC.generate(curve="Ed25519"))

    @property
    def public_key(self) -> bytes:
        return self.key.public_key().export_key(format="raw")

    def member(self) -> pb.MemberIdentifier:
        return pb.MemberIdentifier(installation_public_key=self.public_key)

    def sign(self, text: str) -> pb.Signature:
        signed = eddsa.new(self.key, "rfc8032", context=IDENTITY_UPDATE_CONTEXT).sign(SHA512.new(text.encode()))
        return pb.Signature(installation_key=pb.RecoverableEd25519Signature(bytes=signed, public_key=self.public_key))


def create_inbox(wallet: Wallet, nonce: int = 0) -> tuple[pb.IdentityAction, list[tuple[str, Signer]]]:
    action = pb.IdentityAction(
        create_inbox=pb.CreateInbox(
            initial_identifier=wallet.address, nonce=nonce, initial_identifier_kind=pb.IDENTIFIER_KIND_ETHEREUM
        )
    )
    return action, [("create_inbox.initial_identifier_signature", wallet.sign)]


def add(
    new: pb.MemberIdentifier, existing: Signer, newcomer: Signer
) -> tuple[pb.IdentityAction, list[tuple[str, Signer]]]:
    action = pb.IdentityAction(add=pb.AddAssociation(new_member_identifier=new))
    return action, [("add.existing_member_signature", existing), ("add.new_member_signature", newcomer)]


def revoke(member: pb.MemberIdentifier, recovery: Signer) -> tuple[pb.IdentityAction, list[tuple[str, Signer]]]:
    action = pb.IdentityAction(revoke=pb.RevokeAssociation(member_to_revoke=member))
    return action, [("revoke.recovery_identifier_signature", recovery)]


def change_recovery(new: Wallet, recovery: Signer) -> tuple[pb.IdentityAction, list[tuple[str, Signer]]]:
    action = pb.IdentityAction(
        change_recovery_address=pb.ChangeRecoveryAddress(
            new_recovery_identifier=new.address, new_recovery_identifier_kind=pb.IDENTIFIER_KIND_ETHEREUM
        )
    )
    return action, [("change_recovery_address.existing_recovery_identifier_signature", recovery)]


def signed_update(
    inbox_id: str,
    *actions: tuple[pb.IdentityAction, list[tuple[str, Signer]]],
    timestamp_ns: int = 1_700_000_000 * 10**9,
) -> pb.IdentityUpdate:
    """An update of ``actions`` with every signature made over the update's text by the signer named for it."""
    update = pb.IdentityUpdate(inbox_id=inbox_id, client_timestamp_ns=timestamp_ns)
    for action, _ in actions:
        update.actions.append(action)
    text = signature_text(update)
    for index, (_, signers) in enumerate(actions):
        for path, sign in signers:
            group, field = path.split(".")
            getattr(getattr(update.actions[index], group), field).CopyFrom(sign(text))
    return update


def inbox_of(wallet: Wallet, nonce: int = 0) -> str:
    return inbox_id_for(wallet.identifier, nonce)


def legacy_signer(wallet: Wallet, *, created_ns: int = 1_600_000_000 * 10**9) -> tuple[Signer, Wallet]:
    """A v2 identity key vouched for by ``wallet``, signing in its stead; the signer and the v2 key."""
    legacy = Wallet()
    public = coincurve.PrivateKey(legacy.secret).public_key.format(compressed=False)
    key_bytes = legacy_public_key_pb2.UnsignedPublicKey(
        created_ns=created_ns,
        secp256k1_uncompressed=legacy_public_key_pb2.UnsignedPublicKey.Secp256k1Uncompressed(bytes=public),
    ).SerializeToString()
    vouch = wallet.sign(LEGACY_KEY_TEXT.format(key_hex=key_bytes.hex())).erc_191.bytes
    delegated = legacy_keys_pb2.SignedPublicKey(
        key_bytes=key_bytes,
        signature=legacy_keys_pb2.Signature(
            wallet_ecdsa_compact=legacy_keys_pb2.Signature.WalletECDSACompact(bytes=vouch[:64], recovery=vouch[64] - 27)
        ),
    )

    def sign(text: str) -> pb.Signature:
        return pb.Signature(
            delegated_erc_191=pb.LegacyDelegatedSignature(delegated_key=delegated, signature=legacy.sign(text).erc_191)
        )

    return sign, legacy


@attrs.frozen
class Passkey:
    """A WebAuthn passkey (P-256) that signs the way a browser's authenticator does."""

    key: ec.EllipticCurvePrivateKey = attrs.Factory(lambda: ec.generate_private_key(ec.SECP256R1()))
    origin: str = "https://example.org"

    @property
    def public_key(self) -> bytes:
        return self.key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)

    def sign(self, text: str, *, challenge: str | None = None) -> pb.Signature:
        expected = base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()
        client_data = json.dumps({"type": "webauthn.get", "challenge": challenge or expected, "origin": self.origin})
        authenticator_data = hashlib.sha256(b"example.org").digest() + b"\x05\x00\x00\x00\x01"
        signed = authenticator_data + hashlib.sha256(client_data.encode()).digest()
        return pb.Signature(
            passkey=pb.RecoverablePasskeySignature(
                public_key=self.public_key,
                signature=self.key.sign(signed, ec.ECDSA(hashes.SHA256())),
                authenticator_data=authenticator_data,
                client_data_json=client_data.encode(),
            )
        )
