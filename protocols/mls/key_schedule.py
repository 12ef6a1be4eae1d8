"""Key schedule (RFC 9420 section 8) and transcript hashes (section 8.2).

::

    init_secret[n-1] --Extract(salt)--+  commit_secret (ikm)
                                      v
        ExpandWithLabel(., "joiner", GroupContext[n]) = joiner_secret
                                      |
                 psk_secret (ikm) --Extract(salt=joiner_secret)
                                      |--> DeriveSecret(., "welcome") = welcome_secret
        ExpandWithLabel(., "epoch", GroupContext[n]) = epoch_secret
                                      |--> DeriveSecret(., <label>) for each epoch secret
                                      v
                    DeriveSecret(., "init") = init_secret[n]
"""

from __future__ import annotations

import attrs

from . import suite
from .labels import derive_secret, expand_with_label
from .tls import Reader, Writer

PROTOCOL_VERSION = 1  # mls10


@attrs.frozen
class GroupContext:
    """RFC 9420 GroupContext; ``extensions`` is a tuple of ``(type, data)``."""

    group_id: bytes
    epoch: int
    tree_hash: bytes
    confirmed_transcript_hash: bytes
    extensions: tuple[tuple[int, bytes], ...] = ()
    cipher_suite: int = suite.CIPHER_SUITE
    version: int = PROTOCOL_VERSION

    def encode(self) -> bytes:
        """TLS serialization, as fed to the key schedule and signatures."""
        w = Writer().u16(self.version).u16(self.cipher_suite)
        w.opaque(self.group_id).u64(self.epoch).opaque(self.tree_hash)
        w.opaque(self.confirmed_transcript_hash)
        w.vector(self.extensions, lambda ww, ext: ww.u16(ext[0]).opaque(ext[1]))
        return w.bytes()

    @classmethod
    def decode_from(cls, r: Reader) -> GroupContext:
        """Read a GroupContext from ``r`` (strict)."""
        version, cipher_suite = r.u16(), r.u16()
        group_id, epoch, tree_hash, cth = r.opaque(), r.u64(), r.opaque(), r.opaque()
        extensions = tuple(r.vector(lambda rr: (rr.u16(), rr.opaque())))
        return cls(group_id, epoch, tree_hash, cth, extensions, cipher_suite, version)


@attrs.frozen
class EpochSecrets:
    """Every secret the key schedule derives for one epoch."""

    joiner_secret: bytes
    welcome_secret: bytes
    epoch_secret: bytes
    sender_data_secret: bytes
    encryption_secret: bytes
    exporter_secret: bytes
    external_secret: bytes
    confirmation_key: bytes
    membership_key: bytes
    resumption_psk: bytes
    epoch_authenticator: bytes
    init_secret: bytes


ZERO = bytes(suite.NH)


def joiner_secret(init_secret: bytes, commit_secret: bytes, group_context: bytes) -> bytes:
    """joiner_secret = ExpandWithLabel(Extract(init_secret, commit_secret), "joiner", GC, Nh)."""
    prk = suite.hkdf_extract(init_secret, commit_secret)
    return expand_with_label(prk, "joiner", group_context, suite.NH)


def welcome_secret(joiner: bytes, psk_secret: bytes = ZERO) -> bytes:
    """welcome_secret: available before the joiner knows the GroupContext."""
    return derive_secret(suite.hkdf_extract(joiner, psk_secret), "welcome")


def from_joiner(joiner: bytes, group_context: bytes, psk_secret: bytes = ZERO) -> EpochSecrets:
    """Derive the epoch's secrets from the joiner secret (how Welcome recipients start)."""
    member_prk = suite.hkdf_extract(joiner, psk_secret)
    epoch = expand_with_label(member_prk, "epoch", group_context, suite.NH)
    return EpochSecrets(
        joiner_secret=joiner,
        welcome_secret=derive_secret(member_prk, "welcome"),
        epoch_secret=epoch,
        sender_data_secret=derive_secret(epoch, "sender data"),
        encryption_secret=derive_secret(epoch, "encryption"),
        exporter_secret=derive_secret(epoch, "exporter"),
        external_secret=derive_secret(epoch, "external"),
        confirmation_key=derive_secret(epoch, "confirm"),
        membership_key=derive_secret(epoch, "membership"),
        resumption_psk=derive_secret(epoch, "resumption"),
        epoch_authenticator=derive_secret(epoch, "authentication"),
        init_secret=derive_secret(epoch, "init"),
    )


def derive_epoch(
    init_secret: bytes, commit_secret: bytes, group_context: bytes, psk_secret: bytes = ZERO
) -> EpochSecrets:
    """Full key schedule step from the previous init_secret and this epoch's commit_secret."""
    return from_joiner(joiner_secret(init_secret, commit_secret, group_context), group_context, psk_secret)


def welcome_key_nonce(welcome_secret: bytes) -> tuple[bytes, bytes]:
    """Key and nonce that protect the GroupInfo inside a Welcome (section 12.4.3.1)."""
    key = expand_with_label(welcome_secret, "key", b"", suite.NK)
    nonce = expand_with_label(welcome_secret, "nonce", b"", suite.NN)
    return key, nonce


def mls_exporter(exporter_secret: bytes, label: str | bytes, context: bytes, length: int) -> bytes:
    """MLS-Exporter(label, context, length) (section 8.5)."""
    secret = derive_secret(exporter_secret, label)
    return expand_with_label(secret, "exported", suite.hash_(context), length)


def confirmation_tag(confirmation_key: bytes, confirmed_transcript_hash: bytes) -> bytes:
    """MAC(confirmation_key, confirmed_transcript_hash)."""
    return suite.mac(confirmation_key, confirmed_transcript_hash)


def next_confirmed_transcript_hash(interim_before: bytes, confirmed_input: bytes) -> bytes:
    """confirmed[n] = Hash(interim[n-1] || ConfirmedTranscriptHashInput[n])."""
    return suite.hash_(interim_before + confirmed_input)


def next_interim_transcript_hash(confirmed: bytes, tag: bytes) -> bytes:
    """interim[n] = Hash(confirmed[n] || InterimTranscriptHashInput{confirmation_tag<V>})."""
    return suite.hash_(confirmed + Writer().opaque(tag).bytes())
