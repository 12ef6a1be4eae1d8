"""Which vector type a file holds, told from the keys of its entries (file names vary between copies)."""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls.conformance.registry import VECTOR_TYPES, VectorType


def detect(entries: list[dict[str, Any]]) -> VectorType | None:
    """The type every entry fits (by its keys); None for an empty list or an unknown shape."""
    if not entries or not all(isinstance(entry, dict) for entry in entries):
        return None
    shapes = {frozenset(entry) for entry in entries}
    for vector_type in VECTOR_TYPES:
        if all(vector_type.fits(shape) for shape in shapes):
            return vector_type
    return None
