"""messages.json: every field of every entry decodes as its structure and re-encodes byte for byte."""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure

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
KEYS = frozenset(FIELDS)


def check(entry: dict[str, Any]) -> list[Failure]:
    failures: list[Failure] = []
    for field, (structure, wire_format) in FIELDS.items():
        data = h(entry[field])
        value: Any = decode(structure, data)
        failures += compare(field, encode(value), data)
        if wire_format is not None:
            failures += compare(f"{field}.wire_format", value.wire_format, wire_format)
    return failures
