"""KeyPackages (RFC 9420 §10): creating one, its reference (§5.2) and validating a received one (§10.1).

A KeyPackage is a client's signed offer to be added to a group: an HPKE init
key for the Welcome, a leaf node with its encryption key, credential and
capabilities, and extensions such as ``last_resort``.  The owner keeps the
private halves in :class:`KeyPackageSecrets` until it joins with it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import attrs

from ..codec import encode
from ..crypto import CipherSuite, KeyPair, Rng, UnsupportedCipherSuite, suite
from ..crypto.labels import make_key_package_ref, sign_with_label, verify_with_label
from ..errors import InvalidArgument
from ..messages import (
    Capabilities,
    Credential,
    CredentialType,
    Extension,
    ExtensionType,
    KeyPackage,
    KeyPackageOrigin,
    KeyPackageTBS,
    LeafNodePayload,
    LeafNodeSource,
    Lifetime,
    ProtocolVersion,
    RequiredCapabilities,
)
from ..messages.registries import LAST_RESORT_EXTENSION_TYPE, SELF_REMOVE_PROPOSAL_TYPE
from ..tree.errors import InvalidLeafNode, InvalidLeafSignature
from ..tree.leaf_node import sign_leaf_node
from ..tree.validation import DEFAULT_EXTENSIONS, validate_leaf_node
from .extensions import check_unique
from .refusals import InvalidKeyPackage, InvalidKeyPackageSignature, UnsupportedExtension

KEY_PACKAGE_LABEL = "KeyPackageTBS"
#: The default lifetime starts an hour early, so a peer whose clock runs behind accepts it at once.
LIFETIME_MARGIN_SECONDS = 3600
LIFETIME_SECONDS = 90 * 24 * 3600
#: Every extension type RFC 9420 defines belongs in a leaf node, a GroupInfo or a GroupContext, none in a
#: KeyPackage's own extensions (the "Message(s)" column of the registry, §17.3).
NOT_FOR_KEY_PACKAGES = frozenset(
    {
        ExtensionType.APPLICATION_ID,
        ExtensionType.RATCHET_TREE,
        ExtensionType.REQUIRED_CAPABILITIES,
        ExtensionType.EXTERNAL_PUB,
        ExtensionType.EXTERNAL_SENDERS,
    }
)


@attrs.frozen
class KeyPackageSecrets:
    """The private keys behind a KeyPackage, which its owner needs to join with it.

    Attributes:
        init_private: opens the GroupSecrets a Welcome encrypts to the init key.
        encryption_private: the leaf's HPKE private key in the group's tree.
        signature_private: signs as the leaf's signature key.
    """

    init_private: bytes = attrs.field(repr=False)
    encryption_private: bytes = attrs.field(repr=False)
    signature_private: bytes = attrs.field(repr=False)


def create_key_package(
    cs: CipherSuite,
    credential: Credential,
    signature_key: KeyPair,
    *,
    capabilities: Capabilities | None = None,
    extensions: Sequence[Extension] = (),
    leaf_extensions: Sequence[Extension] = (),
    lifetime: Lifetime | None = None,
    last_resort: bool = False,
    rng: Rng | None = None,
) -> tuple[KeyPackage, KeyPackageSecrets]:
    """A signed KeyPackage for ``credential`` and ``signature_key``, with fresh init and encryption keys from ``rng``.

    ``capabilities`` defaults to MLS 1.0, ``cs`` and basic credentials (plus the
    credential's own type); the non-default extension types the KeyPackage and
    its leaf carry are added to whatever capabilities are used, since a leaf
    must list them (§7.2).  ``lifetime`` defaults to one hour ago until 90 days
    from now.  ``last_resort`` adds the ``last_resort`` extension.
    """
    kp_extensions = (*extensions, Extension(LAST_RESORT_EXTENSION_TYPE, b"")) if last_resort else tuple(extensions)
    _refuse_bad_extension_list(kp_extensions, InvalidArgument)
    _refuse_repeated_types("the leaf's extensions", leaf_extensions, InvalidArgument)
    init, encryption = cs.generate_hpke_key_pair(rng), cs.generate_hpke_key_pair(rng)
    if init.public == encryption.public:
        raise InvalidArgument("the rng gave the same HPKE key twice; a KeyPackage needs distinct init and leaf keys")
    payload = LeafNodePayload(
        encryption_key=encryption.public,
        signature_key=signature_key.public,
        credential=credential,
        capabilities=_with_extension_types(
            capabilities or default_capabilities(cs, credential), (*kp_extensions, *leaf_extensions)
        ),
        leaf_node_source=KeyPackageOrigin(lifetime or default_lifetime(int(time.time()))),
        extensions=tuple(leaf_extensions),
    )
    leaf = sign_leaf_node(cs, signature_key.private, payload, b"", 0)
    tbs = KeyPackageTBS(ProtocolVersion.MLS10, cs.id, init.public, leaf, kp_extensions)
    key_package = sign_key_package(cs, signature_key.private, tbs)
    return key_package, KeyPackageSecrets(init.private, encryption.private, signature_key.private)


def default_capabilities(cs: CipherSuite, credential: Credential) -> Capabilities:
    """MLS 1.0, the suite ``cs``, basic credentials and ``credential``'s type, and the SelfRemove proposal; no GREASE.

    SelfRemove is the one non-default proposal this engine implements; listing
    it lets groups whose members all support it require it (MDK makes such
    groups, and refuses to add a client that does not list it).
    """
    credential_types = tuple(dict.fromkeys((CredentialType.BASIC, credential.credential_type)))
    return Capabilities((ProtocolVersion.MLS10,), (cs.id,), (), (SELF_REMOVE_PROPOSAL_TYPE,), credential_types)


def default_lifetime(now: int) -> Lifetime:
    """From an hour before ``now`` (seconds since the epoch) until 90 days after it."""
    return Lifetime(max(now - LIFETIME_MARGIN_SECONDS, 0), now + LIFETIME_SECONDS)


def _with_extension_types(capabilities: Capabilities, carried: Iterable[Extension]) -> Capabilities:
    """``capabilities`` listing every non-default extension type in ``carried`` too, the caller's order first."""
    return supporting(capabilities, (e.extension_type for e in carried))


def supporting(capabilities: Capabilities, extension_types: Iterable[int]) -> Capabilities:
    """``capabilities`` also listing the non-default ``extension_types`` (defaults are never listed), in order."""
    listed = tuple(capabilities.extensions)
    missing = (t for t in extension_types if t not in DEFAULT_EXTENSIONS)
    return attrs.evolve(capabilities, extensions=tuple(dict.fromkeys((*listed, *missing))))


def sign_key_package(cs: CipherSuite, signature_private: bytes, tbs: KeyPackageTBS) -> KeyPackage:
    """``tbs`` signed with ``SignWithLabel(., "KeyPackageTBS", KeyPackageTBS)``."""
    signature = sign_with_label(cs, signature_private, KEY_PACKAGE_LABEL, encode(tbs, KeyPackageTBS))
    fields = {field.name: getattr(tbs, field.name) for field in attrs.fields(KeyPackageTBS)}
    return KeyPackage(**fields, signature=signature)


def key_package_ref(cs: CipherSuite, key_package: KeyPackage) -> bytes:
    """MakeKeyPackageRef: ``RefHash("MLS 1.0 KeyPackage Reference", KeyPackage)`` (§5.2)."""
    return make_key_package_ref(cs, encode(key_package))


def is_last_resort(key_package: KeyPackage) -> bool:
    """Whether ``key_package`` carries the ``last_resort`` extension: its owner may let it be used more than once."""
    return any(e.extension_type == LAST_RESORT_EXTENSION_TYPE for e in key_package.extensions)


def validate_key_package(
    key_package: KeyPackage,
    *,
    cipher_suite: int | None = None,
    now: int | None = None,
    required: RequiredCapabilities | None = None,
) -> None:
    """Check a received KeyPackage (RFC 9420 §10.1).

    ``cipher_suite`` is the group's suite, ``now`` (seconds since the epoch)
    must fall within the leaf's lifetime, ``required`` is the group's
    ``required_capabilities``.  Raises :class:`InvalidKeyPackage`, or
    :class:`InvalidKeyPackageSignature` (also an ``InvalidSignature``) when the
    KeyPackage's or its leaf's signature does not verify.
    """
    cs = _suite_of(key_package, cipher_suite)
    _check_capabilities(key_package)
    _check_extensions(key_package)
    if key_package.init_key == key_package.leaf_node.encryption_key:
        raise InvalidKeyPackage("the init key is the leaf's encryption key; they must differ")
    try:
        validate_leaf_node(
            cs, key_package.leaf_node, b"", 0, source=LeafNodeSource.KEY_PACKAGE, required=required, now=now
        )
    except InvalidLeafSignature as error:
        raise InvalidKeyPackageSignature("the KeyPackage's leaf node signature does not verify") from error
    except InvalidLeafNode as error:
        raise InvalidKeyPackage(f"the KeyPackage's leaf node is invalid ({error})") from error
    tbs = encode(key_package, KeyPackageTBS)
    if not verify_with_label(cs, key_package.leaf_node.signature_key, KEY_PACKAGE_LABEL, tbs, key_package.signature):
        raise InvalidKeyPackageSignature("the KeyPackage signature does not verify under its leaf's signature key")


def _suite_of(key_package: KeyPackage, expected: int | None) -> CipherSuite:
    """The KeyPackage's cipher suite, once its version and suite are ones we accept."""
    if key_package.version != ProtocolVersion.MLS10:
        raise InvalidKeyPackage(f"protocol version {key_package.version} is not mls10")
    if expected is not None and key_package.cipher_suite != expected:
        raise InvalidKeyPackage(f"the KeyPackage is for cipher suite {key_package.cipher_suite}, not {expected}")
    try:
        return suite(int(key_package.cipher_suite))
    except UnsupportedCipherSuite as error:
        raise InvalidKeyPackage(f"the KeyPackage's cipher suite is unusable: {error}") from error


def _check_capabilities(key_package: KeyPackage) -> None:
    capabilities = key_package.leaf_node.capabilities
    if key_package.version not in capabilities.versions:
        raise InvalidKeyPackage("the leaf's capabilities do not list the KeyPackage's protocol version")
    if key_package.cipher_suite not in capabilities.cipher_suites:
        raise InvalidKeyPackage("the leaf's capabilities do not list the KeyPackage's cipher suite")


def _check_extensions(key_package: KeyPackage) -> None:
    """One of each type, none that belongs in another structure, every non-default type in the capabilities."""
    _refuse_bad_extension_list(key_package.extensions, InvalidKeyPackage)
    types = {e.extension_type for e in key_package.extensions}
    unlisted = types - set(key_package.leaf_node.capabilities.extensions)
    if unlisted:
        raise InvalidKeyPackage(f"extension types {_listed(unlisted)} are not among the leaf's capabilities")


def _refuse_bad_extension_list(extensions: Sequence[Extension], error: type[Exception]) -> None:
    """Raise ``error`` if a type repeats or is one RFC 9420 defines for another structure."""
    _refuse_repeated_types("the KeyPackage's extensions", extensions, error)
    misplaced = {e.extension_type for e in extensions} & NOT_FOR_KEY_PACKAGES
    if misplaced:
        raise error(f"extension types {_listed(misplaced)} do not belong in a KeyPackage")


def _refuse_repeated_types(where: str, extensions: Sequence[Extension], error: type[Exception]) -> None:
    """:func:`.extensions.check_unique`, raising ``error``: a bad KeyPackage, or a bad argument when creating one."""
    try:
        check_unique(extensions, where)
    except UnsupportedExtension as repeated:
        raise error(str(repeated)) from repeated


def _listed(types: Iterable[int]) -> str:
    return ", ".join(str(int(t)) for t in sorted(types))
