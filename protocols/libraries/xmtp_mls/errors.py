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
    """The XMTP node refused or did not answer a call."""


class UnverifiedMember(XmtpMlsError):
    """A group leaf whose installation key its inbox's identity updates do not hold: the group is not trusted."""


class InvalidGroupContext(XmtpMlsError):
    """A group whose context lacks one of libxmtp's extensions, or carries one that does not decode."""


class ForbiddenCommit(XmtpMlsError):
    """A commit libxmtp's validation would reject: a change the committer may not make, or members its
    membership extension and the identity updates do not back.  Never raised out of a sync: the commit
    is reported as a :class:`~.groups.RejectedCommit` and the group stays before it."""
