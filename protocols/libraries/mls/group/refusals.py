"""What the group state machine refuses, and why.

Input that breaks a rule of RFC 9420 is an
:class:`~protocols.libraries.mls.errors.InvalidMessage` (a ``ValueError``), so generic
code treats it as bad input.  Refusals that depend on the state rather than
the input (a message for an epoch we no longer keep, a state that was
removed) derive from :class:`~protocols.libraries.mls.errors.MlsError` only.
"""

from __future__ import annotations

from ..errors import InvalidArgument, InvalidMessage, InvalidSignature, MlsError, NotAMember, WrongEpoch


class InvalidProposalList(InvalidMessage):
    """A commit's proposal list breaks a rule of RFC 9420 section 12.2."""


class InvalidProposal(InvalidMessage):
    """A proposal cannot apply to this group (RFC 9420 section 12.1)."""


class UnknownProposalRef(InvalidMessage):
    """A commit names a proposal by reference that this member never received in the epoch."""


class InvalidCommit(InvalidMessage):
    """A commit is malformed for this group: a missing path, a sender that may not commit, ..."""


class UnsupportedExtension(InvalidMessage):
    """An extension is not supported by every member, or appears twice."""


class MissingPsk(InvalidArgument):
    """A commit or Welcome uses a pre-shared key this member does not hold."""


class NoRatchetTree(InvalidArgument):
    """A Welcome or GroupInfo carries no ``ratchet_tree`` extension and none was passed."""


class GroupInactive(NotAMember):
    """This state was removed from the group: it can read late messages of past epochs, nothing else."""


class EpochNotRetained(WrongEpoch):
    """An epoch's secrets are not kept (older than the window, or never known)."""

    def __init__(self, epoch: int, current: int, kept: tuple[int, ...]) -> None:
        detail = f"kept epochs: {', '.join(map(str, kept))}" if kept else "no earlier epoch is kept"
        super().__init__(epoch, current, detail)


class GroupReinitialized(MlsError):
    """A ReInit was committed: this group is closed; continue in the new group it names."""


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


__all__ = [
    "EpochNotRetained",
    "GroupInactive",
    "GroupReinitialized",
    "InvalidCommit",
    "InvalidKeyPackage",
    "InvalidKeyPackageSignature",
    "InvalidProposal",
    "InvalidProposalList",
    "MissingPsk",
    "NoRatchetTree",
    "UnknownProposalRef",
    "UnsupportedExtension",
    "WelcomeNotForUs",
]
