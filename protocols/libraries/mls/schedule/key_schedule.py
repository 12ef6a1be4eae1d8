"""The key schedule (RFC 9420 section 8): from one epoch's ``init_secret`` to the next epoch's secrets.

::

    init_secret[n-1] --Extract(salt)--+ commit_secret
                                      |
        ExpandWithLabel(., "joiner", GroupContext[n], Nh) = joiner_secret
                                      |
                  psk_secret --Extract(salt = joiner_secret)
                                      |--> DeriveSecret(., "welcome") = welcome_secret
        ExpandWithLabel(., "epoch", GroupContext[n], Nh) = epoch_secret
                                      |--> DeriveSecret(., <label>) = each secret of the epoch
                                      v
                         DeriveSecret(., "init") = init_secret[n]

Members run the whole chain (:func:`next_epoch`); a joiner starts from the
``joiner_secret`` its Welcome carries (:func:`epoch_secrets`).  The
``epoch_secret`` itself is never kept: everything the epoch needs is derived
from it at once.
"""

from __future__ import annotations

import attrs

from ..codec import encode
from ..crypto import CipherSuite, KeyPair
from ..crypto.labels import derive_secret, expand_with_label
from ..errors import InvalidArgument
from ..messages import GroupContext

_EPOCH_LABELS = {
    "sender_data_secret": "sender data",
    "encryption_secret": "encryption",
    "exporter_secret": "exporter",
    "external_secret": "external",
    "confirmation_key": "confirm",
    "membership_key": "membership",
    "resumption_psk": "resumption",
    "epoch_authenticator": "authentication",
    "init_secret": "init",
}


@attrs.frozen(repr=False)
class EpochSecrets:
    """Every secret an epoch lives on, each ``DeriveSecret(epoch_secret, label)`` (RFC 9420 table 4).

    Attributes:
        suite: the group's cipher suite.
        sender_data_secret: keys the sender data of PrivateMessages.
        encryption_secret: the root of the epoch's secret tree.
        exporter_secret: behind :meth:`exporter`.
        external_secret: seeds the external HPKE key pair (:meth:`external_key_pair`).
        confirmation_key: keys the commit's confirmation tag.
        membership_key: keys PublicMessage membership tags.
        resumption_psk: this epoch's resumption PSK, for later epochs and groups.
        epoch_authenticator: a value members can compare out of band.
        init_secret: the start of the next epoch's key schedule.
    """

    suite: CipherSuite
    sender_data_secret: bytes
    encryption_secret: bytes
    exporter_secret: bytes
    external_secret: bytes
    confirmation_key: bytes
    membership_key: bytes
    resumption_psk: bytes
    epoch_authenticator: bytes
    init_secret: bytes

    def __repr__(self) -> str:
        return f"EpochSecrets(suite={self.suite.id})"

    @classmethod
    def from_epoch_secret(cls, cs: CipherSuite, epoch_secret: bytes) -> EpochSecrets:
        """Derive every secret of the epoch from ``epoch_secret``."""
        return cls(cs, **{name: derive_secret(cs, epoch_secret, label) for name, label in _EPOCH_LABELS.items()})

    def exporter(self, label: str | bytes, context: bytes, length: int) -> bytes:
        """MLS-Exporter(label, context, length) of this epoch (section 8.5)."""
        return mls_exporter(self.suite, self.exporter_secret, label, context, length)

    def external_key_pair(self) -> KeyPair:
        """The epoch's external HPKE key pair: ``KEM.DeriveKeyPair(external_secret)`` (section 8.3)."""
        return self.suite.derive_hpke_key_pair(self.external_secret)


@attrs.frozen
class NewEpoch:
    """What a member's key schedule step gives: the joiner and welcome secrets for a Welcome, and the epoch.

    Attributes:
        joiner_secret: goes to new members in GroupSecrets.
        welcome_secret: keys the GroupInfo of a Welcome (:func:`welcome_key_nonce`).
        secrets: the new epoch's secrets.
    """

    joiner_secret: bytes = attrs.field(repr=False)
    welcome_secret: bytes = attrs.field(repr=False)
    secrets: EpochSecrets


def zero_secret(cs: CipherSuite) -> bytes:
    """``Nh`` zero bytes: the ``commit_secret`` of a commit without a path, the ``psk_secret`` without PSKs."""
    return bytes(cs.nh)


def encode_group_context(cs: CipherSuite, group_context: GroupContext) -> bytes:
    """The serialized GroupContext, refused when it names another cipher suite than ``cs``."""
    if group_context.cipher_suite != cs.id:
        raise InvalidArgument(f"the group context is for cipher suite {group_context.cipher_suite}, not {cs.id}")
    return encode(group_context)


def joiner_secret(cs: CipherSuite, init_secret: bytes, commit_secret: bytes, group_context: GroupContext) -> bytes:
    """``ExpandWithLabel(Extract(init_secret, commit_secret), "joiner", GroupContext, Nh)``."""
    context = encode_group_context(cs, group_context)
    return expand_with_label(cs, cs.extract(init_secret, commit_secret), "joiner", context, cs.nh)


def welcome_secret(cs: CipherSuite, joiner: bytes, psk_secret: bytes) -> bytes:
    """``DeriveSecret(Extract(joiner_secret, psk_secret), "welcome")``: known before the GroupContext is."""
    return derive_secret(cs, cs.extract(joiner, psk_secret), "welcome")


def welcome_key_nonce(cs: CipherSuite, welcome: bytes) -> tuple[bytes, bytes]:
    """The AEAD key and nonce that encrypt a Welcome's GroupInfo (section 12.4.3.1)."""
    return expand_with_label(cs, welcome, "key", b"", cs.nk), expand_with_label(cs, welcome, "nonce", b"", cs.nn)


def epoch_secrets(cs: CipherSuite, joiner: bytes, psk_secret: bytes, group_context: GroupContext) -> EpochSecrets:
    """The epoch's secrets from its ``joiner_secret``, as a new member computes them from a Welcome."""
    context = encode_group_context(cs, group_context)
    epoch_secret = expand_with_label(cs, cs.extract(joiner, psk_secret), "epoch", context, cs.nh)
    return EpochSecrets.from_epoch_secret(cs, epoch_secret)


def next_epoch(
    cs: CipherSuite, init_secret: bytes, commit_secret: bytes, psk_secret: bytes, group_context: GroupContext
) -> NewEpoch:
    """One full key schedule step, from the previous epoch's ``init_secret`` (or a new group's random one).

    ``group_context`` is the new epoch's; pass :func:`zero_secret` for a
    missing ``commit_secret`` or ``psk_secret``.
    """
    joiner = joiner_secret(cs, init_secret, commit_secret, group_context)
    return NewEpoch(
        joiner_secret=joiner,
        welcome_secret=welcome_secret(cs, joiner, psk_secret),
        secrets=epoch_secrets(cs, joiner, psk_secret, group_context),
    )


def mls_exporter(cs: CipherSuite, exporter_secret: bytes, label: str | bytes, context: bytes, length: int) -> bytes:
    """``ExpandWithLabel(DeriveSecret(exporter_secret, label), "exported", Hash(context), length)`` (section 8.5)."""
    return expand_with_label(cs, derive_secret(cs, exporter_secret, label), "exported", cs.hash(context), length)
