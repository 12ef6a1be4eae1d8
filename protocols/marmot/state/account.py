"""Our account: the Nostr key that is our identity in every group, and the MLS identity bound to it.

A database speaks for one account.  Its secp256k1 secret signs what we
publish under our name (KeyPackage events, the seals of gift-wrapped
welcomes) and opens the gift wraps addressed to us; the MLS identity's
credential is the account's x-only public key (MIP-00), with its own Ed25519
signature key.  Both are stored sealed under ``account``.
"""

from __future__ import annotations

import attrs

from core.errors import InvalidInput, NotFound
from core.intents import WriteProtocolState
from core.state import ProtocolState
from protocols.libraries import mls
from protocols.libraries.mls.codec import Opaque, decode, encode
from protocols.marmot.state.store import SealedValues
from protocols.marmot.wire import nostr
from protocols.marmot.wire.secp256k1 import check_secret_key

ACCOUNT = "account"
_MAGIC = b"tessera-marmot-account-1"


class NoAccount(NotFound):
    """This database has no Marmot account yet."""

    def __init__(self) -> None:
        super().__init__("no marmot account in this database; create one with `tessera marmot identity new`")


@attrs.frozen
class Account:
    """Our Nostr key pair and MLS identity (secret parts hidden from repr)."""

    secret_key: bytes = attrs.field(repr=False)
    identity: mls.Identity = attrs.field(repr=False)

    @property
    def pubkey(self) -> str:
        """The x-only public key, lowercase hex: our name on Nostr and our MLS credential."""
        return self.identity.credential

    def sign(self, unsigned: dict) -> dict:
        return nostr.sign_event(unsigned, self.secret_key)


@attrs.frozen
class _Stored:
    magic: Opaque
    secret_key: Opaque
    identity: Opaque


def new_account(secret_key: bytes | None = None) -> Account:
    """A fresh account (or one for an existing Nostr ``secret_key``) with a new MLS signature key."""
    secret = nostr.generate_secret_key() if secret_key is None else check_secret_key(secret_key)
    return Account(secret, mls.new_identity(nostr.public_key_xonly(secret).hex()))


def load(state: ProtocolState) -> Account | None:
    """The stored account, or None when there is none."""
    values = SealedValues(state)
    if values.raw(ACCOUNT) is None:
        return None
    plain = values.get(ACCOUNT)
    assert plain is not None
    stored = decode(_Stored, plain)
    if stored.magic != _MAGIC:
        raise InvalidInput("the stored marmot account is not in a format this version reads")
    return Account(stored.secret_key, mls.identity_from_bytes(stored.identity))


def require(state: ProtocolState) -> Account:
    """The stored account; :class:`NoAccount` (saying how to make one) when there is none."""
    found = load(state)
    if found is None:
        raise NoAccount()
    return found


def intent(values: SealedValues, account: Account) -> WriteProtocolState:
    """Store ``account`` sealed."""
    plain = encode(_Stored(_MAGIC, account.secret_key, mls.identity_to_bytes(account.identity)))
    return values.intent(ACCOUNT, plain)
