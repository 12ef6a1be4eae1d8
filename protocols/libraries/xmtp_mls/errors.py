"""What this library refuses, each with a message that says what to do."""

from __future__ import annotations

from core.errors import InvalidInput


class XmtpMlsError(InvalidInput):
    """Base of this library's refusals."""


class UnsupportedWelcome(XmtpMlsError):
    """A welcome wrapped in a way this installation cannot open (post-quantum, a pointer, an unknown algorithm)."""


class WelcomeNotForUs(XmtpMlsError):
    """A welcome whose HPKE key is not the init key of any KeyPackage this installation holds."""


class UndecodableContent(XmtpMlsError):
    """An application message whose plaintext is not a libxmtp PlaintextEnvelope around an EncodedContent."""


class NodeUnavailable(XmtpMlsError):
    """The XMTP node refused or did not answer a call."""


class UnverifiedMember(XmtpMlsError):
    """A group leaf whose installation key its inbox's identity updates do not hold: the group is not trusted."""
