"""KeyPackages in libxmtp's form: checked as a node checks them, and shaped like real libxmtp KeyPackages."""

from __future__ import annotations

import os
import time

from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.messages import KeyPackage, KeyPackageOrigin, Lifetime
from protocols.libraries.mls.messages.extensions import ApplicationId
from protocols.libraries.mls.messages.registries import LAST_RESORT_EXTENSION_TYPE, ExtensionType
from protocols.libraries.xmtp_identity import check_key_package
from protocols.libraries.xmtp_identity.installation import installation_public_key
from protocols.libraries.xmtp_mls import new_key_package
from protocols.libraries.xmtp_mls.key_packages import LIFETIME_MARGIN_SECONDS, LIFETIME_SECONDS
from protocols.libraries.xmtp_mls.profile import (
    CIPHER_SUITE,
    WELCOME_POINTEE_ENCRYPTION_AEAD_TYPES_EXTENSION,
    WELCOME_WRAPPER_ENCRYPTION_EXTENSION,
)
from tests.xmtp_identity.capture import recorded

INBOX = "ab" * 32


def lifetime_of(key_package: KeyPackage) -> Lifetime:
    origin = key_package.leaf_node.leaf_node_source
    assert isinstance(origin, KeyPackageOrigin)
    return origin.lifetime


def test_a_key_package_passes_the_nodes_checks_for_its_inbox_and_installation() -> None:
    seed, now = os.urandom(32), int(time.time())
    raw, private = new_key_package(seed, INBOX, now=now)
    checked = check_key_package(raw, now=now)

    assert checked.inbox_id == INBOX
    assert checked.installation_key == installation_public_key(seed)
    assert checked.cipher_suite == CIPHER_SUITE == 3
    assert (checked.not_before, checked.not_after) == (now - LIFETIME_MARGIN_SECONDS, now + LIFETIME_SECONDS)
    assert checked.init_key == bytes(private.key_package.init_key)


def test_capabilities_extensions_and_lifetime_are_libxmtps() -> None:
    """Compared with the KeyPackages real libxmtp v1.10.0 clients uploaded (tests/xmtp_identity/data)."""
    theirs = [decode(KeyPackage, data) for data in recorded().key_packages]
    raw, _ = new_key_package(os.urandom(32), INBOX)
    ours = decode(KeyPackage, raw)

    for real in theirs:
        assert ours.leaf_node.capabilities == real.leaf_node.capabilities
        assert [e.extension_type for e in ours.leaf_node.extensions] == [
            e.extension_type for e in real.leaf_node.extensions
        ]
        real_lifetime, ours_lifetime = lifetime_of(real), lifetime_of(ours)
        assert ours_lifetime.not_after - ours_lifetime.not_before == real_lifetime.not_after - real_lifetime.not_before
        # ours leave out the post-quantum key and the welcome-pointer support: a deliberate difference
        deliberate = {WELCOME_WRAPPER_ENCRYPTION_EXTENSION, WELCOME_POINTEE_ENCRYPTION_AEAD_TYPES_EXTENSION}
        assert [e.extension_type for e in ours.extensions] == [
            e.extension_type for e in real.extensions if e.extension_type not in deliberate
        ]
    assert [e.extension_type for e in ours.extensions] == [LAST_RESORT_EXTENSION_TYPE]


def test_the_leaf_names_the_inbox_as_its_application_id() -> None:
    raw, _ = new_key_package(os.urandom(32), INBOX)
    (extension,) = decode(KeyPackage, raw).leaf_node.extensions

    assert extension.extension_type == ExtensionType.APPLICATION_ID
    assert decode(ApplicationId, extension.extension_data).application_id == INBOX.encode()


def test_every_key_package_has_fresh_keys() -> None:
    seed = os.urandom(32)
    first, second = (decode(KeyPackage, new_key_package(seed, INBOX)[0]) for _ in range(2))

    assert first.init_key != second.init_key
    assert first.leaf_node.encryption_key != second.leaf_node.encryption_key
    assert first.leaf_node.signature_key == second.leaf_node.signature_key == installation_public_key(seed)
