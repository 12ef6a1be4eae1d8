"""Sealing and opening Welcome messages (RFC 9420 §12.4.3.1); joining the group from one is the state machine's job.

A Welcome carries the new epoch's GroupInfo once, AEAD-encrypted with the
key and nonce of the ``welcome_secret``, and one GroupSecrets per new member
(the ``joiner_secret``, an optional path secret, the PSKs in use), each
HPKE-encrypted to that member's KeyPackage init key with
``EncryptWithLabel(init_key, "Welcome", encrypted_group_info, GroupSecrets)``
and addressed by its KeyPackageRef.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from ..codec import decode, encode
from ..crypto import CipherSuite, Rng
from ..crypto.labels import decrypt_with_label, encrypt_with_label
from ..errors import InvalidArgument, InvalidMessage
from ..messages import (
    EncryptedGroupSecrets,
    GroupInfo,
    GroupSecrets,
    HPKECiphertext,
    KeyPackage,
    PathSecret,
    PreSharedKeyID,
    Welcome,
)
from ..schedule import welcome_key_nonce, welcome_secret, zero_secret
from .key_packages import key_package_ref
from .refusals import MissingPsk, WelcomeNotForUs

WELCOME_LABEL = "Welcome"
#: Turns the PSK ids a Welcome names into the ``psk_secret`` (see :func:`protocols.libraries.mls.schedule.psk_secret`).
PskSecretOf = Callable[[tuple[PreSharedKeyID, ...]], bytes]


@attrs.frozen
class NewMember:
    """A client a Welcome brings in: its KeyPackage and, when the commit had a path, the path secret for it.

    Attributes:
        key_package: the KeyPackage it was added with.
        path_secret: the path secret of the lowest node of the committer's
            path above its leaf (RFC 9420 §12.4.3.1), or None.
    """

    key_package: KeyPackage
    path_secret: bytes | None = attrs.field(repr=False)


@attrs.frozen
class OpenedWelcome:
    """What a new member reads from a Welcome before joining.

    Attributes:
        group_secrets: its joiner secret, path secret and PSK ids.
        group_info: the new epoch's GroupInfo, decrypted but not yet verified.
    """

    group_secrets: GroupSecrets = attrs.field(repr=False)
    group_info: GroupInfo

    @property
    def psk_ids(self) -> tuple[PreSharedKeyID, ...]:
        """The PSKs the epoch's key schedule used, which the joiner must hold too."""
        return self.group_secrets.psks


def seal_welcome(
    cs: CipherSuite,
    group_info: GroupInfo,
    joiner_secret: bytes,
    psk_secret: bytes,
    psks: Sequence[PreSharedKeyID],
    members: Sequence[NewMember],
    rng: Rng | None = None,
) -> Welcome:
    """The Welcome that brings ``members`` into the epoch of ``group_info``.

    ``joiner_secret`` and ``psk_secret`` are the epoch's (the latter the
    zero secret without PSKs), ``psks`` the ids behind it; each member's
    HPKE ephemeral key comes from ``rng``.  Raises :class:`InvalidArgument`
    for a GroupInfo or KeyPackage of another cipher suite.
    """
    _check_suite(cs, "the GroupInfo", group_info.group_context.cipher_suite, InvalidArgument)
    key, nonce = welcome_key_nonce(cs, welcome_secret(cs, joiner_secret, psk_secret))
    encrypted_group_info = cs.seal(key, nonce, b"", encode(group_info))
    shared = GroupSecrets(joiner_secret, None, tuple(psks))
    secrets = tuple(_seal_group_secrets(cs, member, shared, encrypted_group_info, rng) for member in members)
    return Welcome(cs.id, secrets, encrypted_group_info)


def _seal_group_secrets(
    cs: CipherSuite, member: NewMember, shared: GroupSecrets, encrypted_group_info: bytes, rng: Rng | None
) -> EncryptedGroupSecrets:
    """``shared`` with ``member``'s path secret, encrypted to its init key and bound to the encrypted GroupInfo."""
    key_package = member.key_package
    _check_suite(cs, "a new member's KeyPackage", key_package.cipher_suite, InvalidArgument)
    path_secret = None if member.path_secret is None else PathSecret(member.path_secret)
    plaintext = encode(attrs.evolve(shared, path_secret=path_secret))
    kem_output, ciphertext = encrypt_with_label(
        cs, key_package.init_key, WELCOME_LABEL, encrypted_group_info, plaintext, rng
    )
    return EncryptedGroupSecrets(key_package_ref(cs, key_package), HPKECiphertext(kem_output, ciphertext))


def find_secrets(cs: CipherSuite, welcome: Welcome, key_package_ref: bytes) -> EncryptedGroupSecrets:
    """Our entry of ``welcome.secrets``; :class:`WelcomeNotForUs` when the Welcome has none for ``key_package_ref``."""
    _check_suite(cs, "the Welcome", welcome.cipher_suite, InvalidMessage)
    found = next((entry for entry in welcome.secrets if entry.new_member == key_package_ref), None)
    if found is None:
        raise WelcomeNotForUs(key_package_ref)
    return found


def open_group_secrets(cs: CipherSuite, welcome: Welcome, key_package_ref: bytes, init_private: bytes) -> GroupSecrets:
    """Decrypt our GroupSecrets with the init private key of the KeyPackage ``key_package_ref`` names.

    Raises :class:`WelcomeNotForUs`, :class:`~protocols.libraries.mls.errors.DecryptionFailed`
    for a wrong key or tampered ciphertext, and
    :class:`~protocols.libraries.mls.codec.DecodeError` for plaintext that is no GroupSecrets.
    """
    sealed = find_secrets(cs, welcome, key_package_ref).encrypted_group_secrets
    plaintext = decrypt_with_label(
        cs, init_private, WELCOME_LABEL, welcome.encrypted_group_info, sealed.kem_output, sealed.ciphertext
    )
    return decode(GroupSecrets, plaintext)


def open_group_info(cs: CipherSuite, welcome: Welcome, joiner_secret: bytes, psk_secret: bytes) -> GroupInfo:
    """Decrypt the Welcome's GroupInfo with the key and nonce of its ``welcome_secret`` (signature not checked).

    Raises :class:`InvalidMessage` for a Welcome of another cipher suite,
    :class:`~protocols.libraries.mls.errors.DecryptionFailed` when it does not decrypt
    and :class:`~protocols.libraries.mls.codec.DecodeError` when it is no GroupInfo.
    """
    _check_suite(cs, "the Welcome", welcome.cipher_suite, InvalidMessage)
    key, nonce = welcome_key_nonce(cs, welcome_secret(cs, joiner_secret, psk_secret))
    group_info = decode(GroupInfo, cs.open(key, nonce, b"", welcome.encrypted_group_info))
    _check_suite(cs, "the Welcome's GroupInfo", group_info.group_context.cipher_suite, InvalidMessage)
    return group_info


def open_welcome(
    cs: CipherSuite,
    welcome: Welcome,
    key_package_ref: bytes,
    init_private: bytes,
    psk_secret_of: PskSecretOf | None = None,
) -> OpenedWelcome:
    """Our GroupSecrets and the GroupInfo they open, in one step.

    ``psk_secret_of`` computes the ``psk_secret`` of the PSK ids the
    GroupSecrets name; without it, a Welcome that names any raises
    :class:`~.refusals.MissingPsk` (no PSKs means the zero secret).
    """
    group_secrets = open_group_secrets(cs, welcome, key_package_ref, init_private)
    if psk_secret_of is not None:
        psk_secret = psk_secret_of(group_secrets.psks)
    elif group_secrets.psks:
        raise MissingPsk(f"the Welcome uses {len(group_secrets.psks)} PSK(s) and no PSK lookup was given")
    else:
        psk_secret = zero_secret(cs)
    group_info = open_group_info(cs, welcome, group_secrets.joiner_secret, psk_secret)
    return OpenedWelcome(group_secrets, group_info)


def _check_suite(cs: CipherSuite, what: str, suite_id: int, error: type[Exception]) -> None:
    if suite_id != cs.id:
        raise error(f"{what} is for cipher suite {suite_id}, not {cs.id}")
