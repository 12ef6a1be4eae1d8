"""deserialization.json: variable-length integer headers (RFC 9420 section 2.1.2), read and written."""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls.codec import read_varint, write_varint
from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure

KEYS = frozenset({"vlbytes_header", "length"})


def check(entry: dict[str, Any]) -> list[Failure]:
    header = h(entry["vlbytes_header"])
    failures = compare("length", read_varint(header, 0, len(header)), (entry["length"], len(header)))
    written = bytearray()
    write_varint(written, entry["length"])
    return failures + compare("vlbytes_header", bytes(written), header)
