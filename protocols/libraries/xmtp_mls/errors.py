"""What this library refuses, each with a message that says what to do."""

from __future__ import annotations

from core.errors import InvalidInput


class XmtpMlsError(InvalidInput):
    """Base of this library's refusals."""


class UnsupportedWelcome(XmtpMlsError):
    """A welcome wrapped in a way this installation cannot open (post-quantum, a pointer, an unknown algorithm)."""


class WelcomeNotForUs(XmtpMlsError):
    """A welcome whose HPKE key is not the init key of any KeyPackage this installation holds."""


class NodeUnavailable(XmtpMlsError):
    """The XMTP node refused or did not answer a call; ``code`` is the gRPC status's name (``UNAVAILABLE``,
    ``DEADLINE_EXCEEDED``: it did not answer; ``INVALID_ARGUMENT``, ``FAILED_PRECONDITION``...: it refused),
    or None when the call never started (a URL that names no node)."""

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.code = code


class UnverifiedMember(XmtpMlsError):
    """A group leaf whose installation key its inbox's identity updates do not hold: the group is not trusted."""


class IdentityUpdatesBehind(UnverifiedMember):
    """The identity updates at hand do not reach the sequence id a group records for some inboxes.

    From the node itself that is final (the group claims installations the node does not know of); from a
    client's own copy of the updates it means the copy must be refreshed from the node before the welcome
    or commit is judged again.  ``wanted`` maps each such inbox to the sequence id the group records.
    """

    def __init__(self, wanted: dict[str, int], reached: dict[str, int]):
        self.wanted = dict(wanted)
        listed = "; ".join(
            f"inbox {inbox} at identity update {sequence}, but the updates at hand reach only {reached.get(inbox, 0)}"
            for inbox, sequence in sorted(self.wanted.items())
        )
        super().__init__(
            f"the group records {listed}: the group claims installations the node does not know of "
            "(or a copy of the node's updates is behind it)"
        )


class InvalidGroupContext(XmtpMlsError):
    """A group whose context lacks one of libxmtp's extensions, or carries one that does not decode."""


class ForbiddenCommit(XmtpMlsError):
    """A commit libxmtp's validation would reject: a change the committer may not make, or members its
    membership extension and the identity updates do not back.  Never raised out of a sync: the commit
    is reported as a :class:`~.groups.RejectedCommit` and the group stays before it."""


class UnknownAddress(XmtpMlsError):
    """An address no inbox on the node is associated with: it has never registered with XMTP."""


class ChangeNotPermitted(XmtpMlsError):
    """A change this installation's inbox may not make under the group's policies and admin lists (or one
    libxmtp's rules forbid whoever makes it); refused before anything is sent."""


class InstallationsUnavailable(XmtpMlsError):
    """None of an added inbox's installations has a KeyPackage that passes libxmtp's checks: nobody could join."""


class GroupInactive(XmtpMlsError):
    """The group removed this installation; it can neither read nor send there any more."""


class CommitNotConfirmed(XmtpMlsError):
    """A commit this installation published lost the race for its epoch to other members' commits every
    time it was rebuilt; the group is current (the others' commits applied), the change was not made."""


class UnknownPermissions(XmtpMlsError):
    """A permissions preset by a name libxmtp does not have."""
