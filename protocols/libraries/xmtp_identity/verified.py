"""A verified signature of an identity update: the result the association rules work from."""

from __future__ import annotations

import enum

import attrs

from .identifiers import MemberId


class SignatureKind(enum.Enum):
    """The kinds libxmtp distinguishes; the value is its name for each, used in messages."""

    ERC191 = "erc-191"
    INSTALLATION_KEY = "installation-key"
    LEGACY_DELEGATED = "legacy-delegated"
    P256 = "p256"


@attrs.frozen
class VerifiedSignature:
    """A signature that verified, and what it proves.

    Attributes:
        signer: the member whose key made it.
        kind: how it was made.
        raw: the bytes that identify it for replay checks (a normalised ECDSA signature; for a legacy
            delegated signature, the wallet's signature of the delegated key, so that key signs once).
    """

    signer: MemberId
    kind: SignatureKind
    raw: bytes
