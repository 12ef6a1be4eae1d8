"""Shared group-cryptography library: RFC 9420 (MLS), not a plugin.

Protocol plugins (Marmot, the XMTP-style client, the server store) import
the engine API from here; see docs/mls-engine.md.  The layers, each checked
by the official mlswg interop vectors for all seven cipher suites:

- :mod:`.codec` and :mod:`.messages`: the TLS presentation language and
  every RFC 9420 wire structure;
- :mod:`.crypto`: the cipher suites, HPKE, labeled functions;
- :mod:`.schedule`: key schedule, PSKs, secret tree, transcript hashes;
- :mod:`.tree`: the ratchet tree and TreeKEM;
- :mod:`.protection`: PublicMessage and PrivateMessage;
- :mod:`.group`: the group state machine (proposals, commits, Welcome,
  external commits);
- :mod:`.api`: the value-based :class:`GroupEngine` API plugins use
  (:data:`ENGINE`, or the same operations as module functions).
"""

from .api import (
    DEFAULT_SUITE,
    ENGINE,
    ApplicationReceived,
    CommitApplied,
    CommitResult,
    GroupEngine,
    Identity,
    KeyPackagePrivate,
    MessageHeader,
    ProcessResult,
    ProposalReceived,
    Rfc9420Engine,
    commit,
    create_group,
    create_key_package,
    credential_string,
    encrypt_application,
    exporter_secret,
    identity_from_bytes,
    identity_to_bytes,
    identity_with_key,
    join_from_welcome,
    key_package_from_bytes,
    key_package_private_from_bytes,
    key_package_private_to_bytes,
    key_package_reference,
    key_package_to_bytes,
    leaf_of,
    member_credentials,
    member_leaf_extension,
    new_identity,
    own_credential,
    peek,
    process_message,
    propose,
    restore,
    self_remove_capable,
    snapshot,
    welcome_for,
    welcome_refs,
)
from .crypto import Rng
from .errors import (
    CannotDecryptOwnMessage,
    ConfirmationMismatch,
    DecryptionFailed,
    InvalidArgument,
    InvalidMessage,
    InvalidSignature,
    InvalidSnapshot,
    KeyAlreadyUsed,
    MlsError,
    NotAMember,
    RatchetExhausted,
    UnauthorizedCommit,
    WrongEpoch,
)
from .group.state import GroupConfig, GroupState
from .messages import KeyPackage

__all__ = [
    "DEFAULT_SUITE",
    "ENGINE",
    "ApplicationReceived",
    "CannotDecryptOwnMessage",
    "CommitApplied",
    "CommitResult",
    "ConfirmationMismatch",
    "DecryptionFailed",
    "GroupConfig",
    "GroupEngine",
    "GroupState",
    "Identity",
    "InvalidArgument",
    "InvalidMessage",
    "InvalidSignature",
    "InvalidSnapshot",
    "KeyAlreadyUsed",
    "KeyPackage",
    "KeyPackagePrivate",
    "MessageHeader",
    "MlsError",
    "NotAMember",
    "ProcessResult",
    "ProposalReceived",
    "RatchetExhausted",
    "Rfc9420Engine",
    "Rng",
    "UnauthorizedCommit",
    "WrongEpoch",
    "commit",
    "create_group",
    "create_key_package",
    "credential_string",
    "encrypt_application",
    "exporter_secret",
    "identity_from_bytes",
    "identity_to_bytes",
    "identity_with_key",
    "join_from_welcome",
    "key_package_from_bytes",
    "key_package_private_from_bytes",
    "key_package_private_to_bytes",
    "key_package_reference",
    "key_package_to_bytes",
    "leaf_of",
    "member_credentials",
    "member_leaf_extension",
    "new_identity",
    "own_credential",
    "peek",
    "process_message",
    "propose",
    "restore",
    "self_remove_capable",
    "snapshot",
    "welcome_for",
    "welcome_refs",
]
