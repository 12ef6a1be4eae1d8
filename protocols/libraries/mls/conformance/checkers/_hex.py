"""Helpers shared by the checkers: vector hex to bytes, and comparing one field."""

from __future__ import annotations

from protocols.libraries.mls.conformance.report import Failure


def h(value: str | None) -> bytes:
    """Hex string from a vector to bytes (absent means empty)."""
    return bytes.fromhex(value or "")


def compare(field: str, got: object, expected: object) -> list[Failure]:
    """No failure when equal; otherwise one naming ``field``, with both values (vectors hold no secrets of ours)."""
    if got == expected:
        return []
    shown = [value.hex() if isinstance(value, bytes) else repr(value) for value in (got, expected)]
    return [Failure(field, f"got {shown[0]}, expected {shown[1]}")]
