"""Errors of the RFC 9420 group engine: key packages, group infos, welcomes and the group state machine.

Each refines the library error that already means the same thing, so callers
can catch either.  Messages name checks and reference prefixes, never keys or
secrets.
"""

from __future__ import annotations

from ..errors import InvalidArgument, InvalidMessage, InvalidSignature


class InvalidKeyPackage(InvalidMessage):
    """A KeyPackage fails the checks of RFC 9420 §10.1; the message names the check."""


class InvalidKeyPackageSignature(InvalidKeyPackage, InvalidSignature):
    """A KeyPackage's signature, or its leaf node's, does not verify under the leaf's signature key."""


class WelcomeNotForUs(InvalidArgument):
    """A Welcome has no GroupSecrets for our KeyPackageRef: it adds other clients, not this one.

    ``key_package_ref`` is the reference looked for.
    """

    def __init__(self, key_package_ref: bytes) -> None:
        self.key_package_ref = key_package_ref
        super().__init__(f"the Welcome has no secrets for key package {key_package_ref[:8].hex()}…")
