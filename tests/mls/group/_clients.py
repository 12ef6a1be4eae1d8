"""Clients with seeded keys and KeyPackages, for the group-engine tests: every run builds the same bytes."""

from __future__ import annotations

from typing import Any

import attrs

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.crypto import CipherSuite, KeyPair
from protocols.libraries.mls.group.key_packages import KeyPackageSecrets, create_key_package
from tests.mls.tree._members import seeded_rng

#: A time inside every lifetime the tests give (seconds since the epoch).
NOW = 1_700_000_000
LIFETIME = m.Lifetime(NOW - 3600, NOW + 3600)


@attrs.frozen
class Client:
    """A client's signature key, and one KeyPackage with its private keys."""

    name: bytes
    signature: KeyPair = attrs.field(repr=False)
    key_package: m.KeyPackage
    secrets: KeyPackageSecrets


def client(cs: CipherSuite, name: bytes, **options: Any) -> Client:
    """A client called ``name`` whose keys come from a seed made of the suite and the name."""
    rng = seeded_rng(b"client %d " % cs.id + name)
    signature = cs.generate_signature_key_pair(rng)
    options.setdefault("lifetime", LIFETIME)
    key_package, secrets = create_key_package(cs, m.BasicCredential(name), signature, rng=rng, **options)
    return Client(name, signature, key_package, secrets)
