"""messages.json, parsed once, and the structure each of its fields holds."""

from __future__ import annotations

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.conformance.checkers.messages import FIELDS

from .._vectors import h, load

ENTRIES = load("messages", suite_only=False)

#: The first entry's fields as (structure, bytes): real messages to cut, corrupt and modify.
SAMPLES = {field: (FIELDS[field][0], h(ENTRIES[0][field])) for field in FIELDS}


def key_package() -> m.KeyPackage:
    """The first entry's KeyPackage (the one inside its mls_key_package MLSMessage)."""
    message = decode(m.MLSMessage, SAMPLES["mls_key_package"][1]).message
    assert isinstance(message, m.KeyPackage)
    return message
