"""An XMTP installation in libxmtp's MLS profile: identity on a node, KeyPackages libxmtp accepts,
joining from libxmtp's welcomes, messages both ways (content decoded by protocols/libraries/xmtp_content),
libxmtp's group context and commit rules, and groups and DMs it creates and changes by commits libxmtp
accepts (docs/xmtp-mls.md).

A shared library, not a plugin: the XMTP plugin builds on it.  It talks to a
node through :class:`XmtpNode` and keeps nothing itself; callers store the
:class:`Installation` and :class:`JoinedGroup` values (group states hold every
private key of their epoch: seal them at rest).
"""

from .commit_checks import check_commit
from .context import group_context
from .creating import create_dm, create_group, find_dm
from .errors import (
    ChangeNotPermitted,
    CommitNotConfirmed,
    ForbiddenCommit,
    GroupInactive,
    IdentityUpdatesBehind,
    InstallationsUnavailable,
    InvalidGroupContext,
    NodeUnavailable,
    UnknownAddress,
    UnknownPermissions,
    UnsupportedWelcome,
    UnverifiedMember,
    WelcomeNotForUs,
    XmtpMlsError,
)
from .events import (
    AppliedCommit,
    Committed,
    GroupEvent,
    PendingProposal,
    ReceivedMessage,
    RejectedCommit,
    SealedMessage,
    SupersededCommit,
    UnreadableMessage,
)
from .groups import JoinedGroup
from .installation import Installation, join_welcome, welcome_id
from .key_packages import credential_for, inbox_of_credential, new_key_package
from .membership import IdentityUpdates, check_members, inbox_states, verify_members
from .node import UpdateLog, XmtpNode
from .welcomes import (
    OpenedWelcome,
    open_welcome,
    unwrap_welcome,
    unwrap_welcome_with_cursor,
    welcome_for_key_package,
    wrap_welcome,
    wrap_welcome_with_cursor,
)

__all__ = [
    "AppliedCommit",
    "ChangeNotPermitted",
    "CommitNotConfirmed",
    "Committed",
    "ForbiddenCommit",
    "GroupEvent",
    "GroupInactive",
    "IdentityUpdates",
    "IdentityUpdatesBehind",
    "Installation",
    "InstallationsUnavailable",
    "InvalidGroupContext",
    "JoinedGroup",
    "NodeUnavailable",
    "OpenedWelcome",
    "PendingProposal",
    "ReceivedMessage",
    "RejectedCommit",
    "SealedMessage",
    "SupersededCommit",
    "UnknownAddress",
    "UnknownPermissions",
    "UnreadableMessage",
    "UnsupportedWelcome",
    "UnverifiedMember",
    "UpdateLog",
    "WelcomeNotForUs",
    "XmtpMlsError",
    "XmtpNode",
    "check_commit",
    "check_members",
    "create_dm",
    "create_group",
    "credential_for",
    "find_dm",
    "group_context",
    "inbox_of_credential",
    "inbox_states",
    "join_welcome",
    "new_key_package",
    "open_welcome",
    "unwrap_welcome",
    "unwrap_welcome_with_cursor",
    "verify_members",
    "welcome_for_key_package",
    "welcome_id",
    "wrap_welcome",
    "wrap_welcome_with_cursor",
]
