"""RFC 9420 cryptography for all seven MLS cipher suites.

- :mod:`.suites`: :class:`CipherSuite` (hash, MAC, HKDF, AEAD, signatures,
  HPKE keys) and the registry :func:`suite`.
- :mod:`.labels`: ExpandWithLabel, DeriveSecret, DeriveTreeSecret, RefHash,
  SignWithLabel/VerifyWithLabel, EncryptWithLabel/DecryptWithLabel.
- :mod:`.hpke`: RFC 9180 base-mode single-shot HPKE with an injectable
  ephemeral key; :mod:`.kem`, :mod:`.kdf`, :mod:`.aead` and
  :mod:`.signature` hold the primitives, all from ``cryptography`` except
  Ed25519, which uses libsodium for speed.

Every random byte comes from an injectable ``Rng`` (:mod:`.keys`).  Secrets
never appear in a repr or an error message.
"""

from .errors import InvalidKey, UnsupportedCipherSuite
from .keys import KeyPair, Rng
from .suites import SUITES, CipherSuite, suite

__all__ = ["SUITES", "CipherSuite", "InvalidKey", "KeyPair", "Rng", "UnsupportedCipherSuite", "suite"]
