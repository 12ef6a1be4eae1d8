"""Loader for the RFC 9420 test vectors shipped with the package (see protocols/libraries/mls/conformance/vectors/SOURCES.md)."""

from __future__ import annotations

import json

from protocols.libraries.mls.conformance.shipped import vector_file


def load(name: str, *, suite_only: bool = True) -> list[dict]:
    """Entries of ``<name>.json``; by default only cipher suite 1 entries."""
    entries = json.loads(vector_file(name).read_text())
    if suite_only:
        entries = [e for e in entries if e.get("cipher_suite") == 1]
    assert entries, f"no usable entries in {name}.json"
    return entries


def h(value: str | None) -> bytes:
    """Hex string from a vector to bytes."""
    return bytes.fromhex(value or "")
