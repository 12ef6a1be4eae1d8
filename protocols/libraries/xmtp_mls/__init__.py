"""An XMTP installation in libxmtp's MLS profile: identity on a node, KeyPackages libxmtp accepts,
joining from libxmtp's welcomes, messages both ways (content decoded by protocols/libraries/xmtp_content),
and libxmtp's group context and commit rules (docs/xmtp-mls.md).

A shared library, not a plugin: the XMTP plugin builds on it.  It talks to a
node through :class:`XmtpNode` and keeps nothing itself; callers store the
:class:`Installation` and :class:`JoinedGroup` values (group states hold every
private key of their epoch: seal them at rest).
"""

from .commit_checks import check_commit
from .context import group_context
from .errors import (
    ForbiddenCommit,
    IdentityUpdatesBehind,
    InvalidGroupContext,
    NodeUnavailable,
    UnsupportedWelcome,
    UnverifiedMember,
    WelcomeNotForUs,
    XmtpMlsError,
)
from .groups import (
    AppliedCommit,
    GroupEvent,
    JoinedGroup,
    PendingProposal,
    ReceivedMessage,
    RejectedCommit,
    SealedMessage,
    UnreadableMessage,
)
from .installation import Installation, join_welcome, welcome_id
from .key_packages import credential_for, inbox_of_credential, new_key_package
from .membership import IdentityUpdates, UpdateLog, check_members, inbox_states, verify_members
from .node import XmtpNode
from .welcomes import unwrap_welcome, welcome_for_key_package, wrap_welcome

__all__ = [
    "AppliedCommit",
    "ForbiddenCommit",
    "GroupEvent",
    "IdentityUpdates",
    "IdentityUpdatesBehind",
    "Installation",
    "InvalidGroupContext",
    "JoinedGroup",
    "NodeUnavailable",
    "PendingProposal",
    "ReceivedMessage",
    "RejectedCommit",
    "SealedMessage",
    "UnreadableMessage",
    "UnsupportedWelcome",
    "UnverifiedMember",
    "UpdateLog",
    "WelcomeNotForUs",
    "XmtpMlsError",
    "XmtpNode",
    "check_commit",
    "check_members",
    "credential_for",
    "group_context",
    "inbox_of_credential",
    "inbox_states",
    "join_welcome",
    "new_key_package",
    "unwrap_welcome",
    "verify_members",
    "welcome_for_key_package",
    "welcome_id",
    "wrap_welcome",
]
