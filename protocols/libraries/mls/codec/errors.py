"""Errors of the wire codec, each naming the field path where it happened.

A path reads like an attribute access on the value being decoded or encoded,
``KeyPackage.leaf_node.capabilities.versions[2]``, so a refused message says
which field broke and not only at which byte.
"""

from __future__ import annotations

from ..errors import InvalidArgument, InvalidMessage


class _FieldPathError:
    """Mixin: a reason, an optional byte offset and a path built from the inside out."""

    reason: str
    offset: int | None
    _segments: list[str]

    def _init_path(self, reason: str, offset: int | None) -> None:
        self.reason = reason
        self.offset = offset
        # Segments are added innermost first while the error unwinds, so they are stored reversed.
        self._segments = []

    def within(self, segment: str) -> None:
        """Record that the error happened inside ``segment`` (``.field``, ``[3]`` or a type name)."""
        self._segments.append(segment)

    @property
    def path(self) -> str:
        """The field path, outermost first: ``KeyPackage.leaf_node.signature``."""
        return "".join(reversed(self._segments))

    def __str__(self) -> str:
        where = f" (at byte {self.offset})" if self.offset is not None else ""
        path = self.path
        return f"{path}: {self.reason}{where}" if path else f"{self.reason}{where}"


class DecodeError(_FieldPathError, InvalidMessage):
    """Bytes are not a valid encoding of the requested RFC 9420 structure.

    Truncated, overrunning or trailing bytes, a non-minimal or out-of-range
    variable-length integer, an enum value the RFC does not define, a select
    case that does not exist: all land here, with the field path and offset.
    """

    def __init__(self, reason: str, offset: int | None = None) -> None:
        self._init_path(reason, offset)
        super().__init__(reason)


class EncodeError(_FieldPathError, InvalidArgument):
    """A value cannot be encoded: wrong type, out of range, or inconsistent with its select."""

    def __init__(self, reason: str) -> None:
        self._init_path(reason, None)
        super().__init__(reason)
