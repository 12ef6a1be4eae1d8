"""messages.json, parsed once, and the structure each of its fields holds."""

from __future__ import annotations

from protocols.mls import messages as m
from protocols.mls.codec import decode

from .._vectors import h, load

ENTRIES = load("messages", suite_only=False)

#: Each field of an entry, the structure it holds, and for MLSMessages the wire format.
FIELDS: dict[str, tuple[type, m.WireFormat | None]] = {
    "mls_welcome": (m.MLSMessage, m.WireFormat.MLS_WELCOME),
    "mls_group_info": (m.MLSMessage, m.WireFormat.MLS_GROUP_INFO),
    "mls_key_package": (m.MLSMessage, m.WireFormat.MLS_KEY_PACKAGE),
    "ratchet_tree": (m.RatchetTree, None),
    "group_secrets": (m.GroupSecrets, None),
    "add_proposal": (m.Add, None),
    "update_proposal": (m.Update, None),
    "remove_proposal": (m.Remove, None),
    "pre_shared_key_proposal": (m.PreSharedKey, None),
    "re_init_proposal": (m.ReInit, None),
    "external_init_proposal": (m.ExternalInit, None),
    "group_context_extensions_proposal": (m.GroupContextExtensions, None),
    "commit": (m.Commit, None),
    "public_message_application": (m.MLSMessage, m.WireFormat.MLS_PUBLIC_MESSAGE),
    "public_message_proposal": (m.MLSMessage, m.WireFormat.MLS_PUBLIC_MESSAGE),
    "public_message_commit": (m.MLSMessage, m.WireFormat.MLS_PUBLIC_MESSAGE),
    "private_message": (m.MLSMessage, m.WireFormat.MLS_PRIVATE_MESSAGE),
}

#: The first entry's fields as (structure, bytes): real messages to cut, corrupt and modify.
SAMPLES = {field: (FIELDS[field][0], h(ENTRIES[0][field])) for field in FIELDS}


def key_package() -> m.KeyPackage:
    """The first entry's KeyPackage (the one inside its mls_key_package MLSMessage)."""
    message = decode(m.MLSMessage, SAMPLES["mls_key_package"][1]).message
    assert isinstance(message, m.KeyPackage)
    return message
