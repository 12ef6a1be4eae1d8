"""Errors of the conformance runner: a file it cannot read or whose entries match no known vector type."""

from __future__ import annotations

from core.errors import InvalidInput


class UnknownVectorFile(InvalidInput):
    """The file is not JSON, not a list of entries, or its entries' keys match no known vector type."""
