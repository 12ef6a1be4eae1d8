"""XMTP identity and validation: what an XMTP node (or client) checks before it trusts an upload.

A shared library, not a plugin: the XMTP node in ``tessera serve`` calls it
before storing anything, and the XMTP client plugin may use it to derive inbox
ids and check identity updates.  Every function is pure (no I/O) and refuses
bad input with :class:`Refused`, whose ``reason`` is a short machine code and
whose ``status`` is the gRPC status a node answers with.  The rules mirror
libxmtp v1.10.0; docs/xmtp-identity.md lists each check and its upstream rule.
"""

from .associations import InboxState, Member, apply_identity_update
from .errors import Refused
from .group_messages import CheckedGroupMessage, check_group_message, check_welcome
from .identifiers import ETHEREUM, PASSKEY, Identifier, MemberId, MemberKind, inbox_id_for
from .key_packages import CheckedKeyPackage, check_key_package
from .signature_text import signature_text
from .stored_state import inbox_state_from_bytes, inbox_state_to_bytes

__all__ = [
    "ETHEREUM",
    "PASSKEY",
    "CheckedGroupMessage",
    "CheckedKeyPackage",
    "Identifier",
    "InboxState",
    "Member",
    "MemberId",
    "MemberKind",
    "Refused",
    "apply_identity_update",
    "check_group_message",
    "check_key_package",
    "check_welcome",
    "inbox_id_for",
    "inbox_state_from_bytes",
    "inbox_state_to_bytes",
    "signature_text",
]
