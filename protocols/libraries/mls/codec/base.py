"""The codec contract every field codec implements, and the scopes selects read from.

A codec reads from an immutable ``bytes`` buffer between two offsets and
returns the value with the offset after it; nothing is sliced except the
bytes that become an ``opaque`` value, so decoding a large ratchet tree is
linear in its size.  Writing appends to one ``bytearray``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

T = TypeVar("T")

#: Parameters handed to a struct from outside its own bytes (RFC 9420 selects on
#: another struct's field, e.g. ``FramedContentAuthData`` on ``FramedContent.content_type``).
Params = Mapping[str, object]

NO_PARAMS: Params = {}


class Missing:
    """The type of :data:`MISSING`: a name a scope does not know."""

    __slots__ = ()


MISSING = Missing()


class Scope:
    """The names a select may refer to while a struct is read or written.

    Own fields come first, then the parameters the struct was given.
    """

    __slots__ = ("params",)

    def __init__(self, params: Params) -> None:
        self.params = params

    def lookup(self, name: str) -> object:
        return self.params.get(name, MISSING)


class DecodeScope(Scope):
    """The fields decoded so far, then the parameters."""

    __slots__ = ("values",)

    def __init__(self, values: Mapping[str, object], params: Params) -> None:
        super().__init__(params)
        self.values = values

    def lookup(self, name: str) -> object:
        if name in self.values:
            return self.values[name]
        return self.params.get(name, MISSING)


class EncodeScope(Scope):
    """The value being written (fields and properties), then the parameters."""

    __slots__ = ("value",)

    def __init__(self, value: object, params: Params) -> None:
        super().__init__(params)
        self.value = value

    def lookup(self, name: str) -> object:
        found = getattr(self.value, name, MISSING)
        return self.params.get(name, MISSING) if found is MISSING else found


EMPTY_SCOPE = Scope(NO_PARAMS)


def resolve(scope: Scope, path: tuple[str, ...]) -> object:
    """Follow ``a.b.c``: ``a`` from the scope, then attributes; :data:`MISSING` if any step is absent."""
    value = scope.lookup(path[0])
    for name in path[1:]:
        if value is MISSING:
            break
        value = getattr(value, name, MISSING)
    return value


class Codec(Generic[T]):
    """Reads and writes one TLS presentation-language type.

    ``read`` returns ``(value, offset after it)`` and never reads at or past
    ``end``; ``write`` appends the encoding to ``out``.  Both raise only
    :class:`~.errors.DecodeError` / :class:`~.errors.EncodeError`.
    """

    __slots__ = ()

    #: True for codecs that look names up in the enclosing struct (selects, bound structs).
    uses_scope = False

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[T, int]:
        raise NotImplementedError

    def write(self, out: bytearray, value: T, scope: Scope) -> None:
        raise NotImplementedError

    def read_top(self, data: bytes, pos: int, end: int, params: Params) -> tuple[T, int]:
        """Read as a top-level value: structs receive ``params``, other codecs see them as their scope."""
        return self.read(data, pos, end, Scope(params) if params else EMPTY_SCOPE)

    def write_top(self, out: bytearray, value: T, params: Params) -> None:
        """Write as a top-level value (see :meth:`read_top`)."""
        self.write(out, value, Scope(params) if params else EMPTY_SCOPE)
