"""Shared group-cryptography library (RFC 9420 building blocks + a group engine).

Not a plugin.  Protocol plugins (Marmot, ...) import the engine API from
here.  Part 1 (verified against the RFC 9420 test vectors, cipher suite 1):
:mod:`.suite`, :mod:`.hpke`, :mod:`.tls`, :mod:`.labels`, :mod:`.treemath`,
:mod:`.key_schedule`, :mod:`.secret_tree`.  Part 2: the :class:`GroupEngine`
interface and the shipped :class:`FlatTreeEngine` (see docs/mls-engine.md:
it is NOT full RFC 9420).
"""

from .credentials import Identity, KeyPackage, KeyPackagePrivate, LeafNode
from .engine import (
    ENGINE,
    FlatTreeEngine,
    GroupEngine,
    commit,
    create_group,
    create_key_package,
    encrypt_application,
    exporter_secret,
    identity_from_bytes,
    identity_to_bytes,
    join_from_welcome,
    key_package_from_bytes,
    key_package_private_from_bytes,
    key_package_private_to_bytes,
    key_package_to_bytes,
    new_identity,
    peek,
    process_message,
    propose,
    restore,
    snapshot,
)
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
from .framing import MessageHeader
from .results import ApplicationReceived, CommitApplied, CommitResult, ProcessResult, ProposalReceived
from .state import GroupState

__all__ = [
    "ENGINE",
    "ApplicationReceived",
    "CannotDecryptOwnMessage",
    "CommitApplied",
    "CommitResult",
    "ConfirmationMismatch",
    "DecryptionFailed",
    "FlatTreeEngine",
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
    "LeafNode",
    "MessageHeader",
    "MlsError",
    "NotAMember",
    "ProcessResult",
    "ProposalReceived",
    "RatchetExhausted",
    "UnauthorizedCommit",
    "WrongEpoch",
    "commit",
    "create_group",
    "create_key_package",
    "encrypt_application",
    "exporter_secret",
    "identity_from_bytes",
    "identity_to_bytes",
    "join_from_welcome",
    "key_package_from_bytes",
    "key_package_private_from_bytes",
    "key_package_private_to_bytes",
    "key_package_to_bytes",
    "new_identity",
    "peek",
    "process_message",
    "propose",
    "restore",
    "snapshot",
]
