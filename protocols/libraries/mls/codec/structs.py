"""Structs: attrs classes whose annotated fields, in order, are the wire layout.

A struct is declared once, the way RFC 9420 writes it::

    @frozen
    class Lifetime:
        not_before: Uint64
        not_after: Uint64

Each field's codec comes from its annotation: ``Annotated[T, codec]`` names
it, another struct (or variant) class uses that class's codec,
``tuple[X, ...]`` is the vector ``X items<V>`` and ``X | None`` is
``optional<X>``; enums subclassing ``Uint8Enum``/``Uint16Enum`` are closed
enums of that width.  The layout is worked out on first use, so a struct may
name classes declared after it.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from enum import IntEnum
from typing import Annotated, Any, TypeVar, cast, get_args, get_origin, get_type_hints

import attrs

from .base import EMPTY_SCOPE, MISSING, NO_PARAMS, Codec, DecodeScope, EncodeScope, Params, Scope, resolve
from .containers import Optional, Vector
from .errors import DecodeError, EncodeError
from .primitives import ClosedEnum

T = TypeVar("T")

#: Codecs registered for a class itself (variant bases); looked up by exact class.
CLASS_CODECS: dict[type, Codec[Any]] = {}

_ENUM_CODECS: dict[type, Codec[Any]] = {}


def codec_of(form: object) -> Codec[Any]:
    """The codec for a type annotation (see the module docstring for the rules)."""
    origin = get_origin(form)
    if origin is Annotated:
        return _annotated(form)
    if isinstance(form, type):
        return _class_codec(form)
    args = get_args(form)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return Vector(codec_of(args[0]))
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        present = args[0] if args[1] is type(None) else args[1]
        return Optional(codec_of(present))
    raise TypeError(f"no wire codec for {form!r}: annotate it, e.g. Annotated[int, U16] or Annotated[bytes, OPAQUE]")


def _annotated(form: object) -> Codec[Any]:
    base, *metadata = get_args(form)
    codecs = [item for item in metadata if isinstance(item, Codec)]
    codec = codecs[-1] if codecs else codec_of(base)
    for item in metadata:
        if isinstance(item, Bind):
            codec = Bound(codec, item.bindings)
    return codec


def _class_codec(cls: type) -> Codec[Any]:
    codec = CLASS_CODECS.get(cls)
    if codec is not None:
        return codec
    if attrs.has(cls):
        codec = CLASS_CODECS[cls] = StructCodec(cls)
        return codec
    if issubclass(cls, IntEnum):
        codec = _ENUM_CODECS.get(cls)
        if codec is None:
            codec = _ENUM_CODECS[cls] = ClosedEnum(cls)
        return codec
    raise TypeError(
        f"no wire codec for {cls.__name__}: annotate the field (Uint16, Opaque, Annotated[{cls.__name__}, codec])"
        " or use an attrs class, a variant or a Uint8Enum/Uint16Enum"
    )


class StructCodec(Codec[T]):
    """``struct { ... }``: the fields one after the other, no framing of its own."""

    __slots__ = ("_fields", "_scoped", "cls")

    def __init__(self, cls: type[T]) -> None:
        self.cls = cls
        self._fields: tuple[tuple[str, Codec[Any]], ...] | None = None
        self._scoped = False

    def fields(self) -> tuple[tuple[str, Codec[Any]], ...]:
        """``(name, codec)`` per field, in wire order."""
        if self._fields is None:
            hints = get_type_hints(self.cls, include_extras=True)
            plan = []
            # Only attrs classes get a StructCodec (see _class_codec).
            for field in attrs.fields(cast("type[attrs.AttrsInstance]", self.cls)):
                try:
                    plan.append((field.name, codec_of(hints[field.name])))
                except TypeError as error:
                    raise TypeError(f"{self.cls.__name__}.{field.name}: {error}") from error
            self._scoped = any(codec.uses_scope for _, codec in plan)
            self._fields = tuple(plan)
        return self._fields

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[T, int]:
        return self.read_fields(data, pos, end, NO_PARAMS)

    def write(self, out: bytearray, value: T, scope: Scope) -> None:
        self.write_fields(out, value, NO_PARAMS)

    def read_top(self, data: bytes, pos: int, end: int, params: Params) -> tuple[T, int]:
        return self.read_fields(data, pos, end, params)

    def write_top(self, out: bytearray, value: T, params: Params) -> None:
        self.write_fields(out, value, params)

    def read_fields(
        self, data: bytes, pos: int, end: int, params: Params, given: dict[str, object] | None = None
    ) -> tuple[T, int]:
        """Read the fields not in ``given`` (a variant's tag, read already) and build the value."""
        fields = self._fields or self.fields()
        values: dict[str, object] = {} if given is None else given
        scope = DecodeScope(values, params) if self._scoped else EMPTY_SCOPE
        name = ""
        try:
            for name, codec in fields:
                if name not in values:
                    values[name], pos = codec.read(data, pos, end, scope)
        except DecodeError as error:
            error.within(f".{name}")
            raise
        return self.cls(**values), pos

    def write_fields(self, out: bytearray, value: T, params: Params, skip: frozenset[str] = frozenset()) -> None:
        """Write every field except those in ``skip``."""
        if not isinstance(value, self.cls):
            raise EncodeError(f"expected {self.cls.__name__}, got {type(value).__name__}")
        fields = self._fields or self.fields()
        scope = EncodeScope(value, params) if self._scoped else EMPTY_SCOPE
        name = ""
        try:
            for name, codec in fields:
                if name not in skip:
                    codec.write(out, getattr(value, name), scope)
        except EncodeError as error:
            error.within(f".{name}")
            raise


class Bind:
    """``Annotated`` metadata handing a struct field parameters taken from the enclosing struct.

    RFC 9420 lets a struct select on a field of another struct
    (``FramedContentAuthData`` on ``FramedContent.content_type``); the field
    that holds it names where that value comes from::

        auth: Annotated[FramedContentAuthData, Bind(content_type="content.content_type")]
    """

    __slots__ = ("bindings",)

    def __init__(self, **bindings: str) -> None:
        self.bindings = {name: tuple(path.split(".")) for name, path in bindings.items()}


class Bound(Codec[T]):
    """A struct codec read and written with parameters resolved in the enclosing scope."""

    __slots__ = ("bindings", "inner")

    uses_scope = True

    def __init__(self, inner: Codec[T], bindings: Mapping[str, tuple[str, ...]]) -> None:
        self.inner = inner
        self.bindings = bindings

    def params(self, scope: Scope, error: type[DecodeError] | type[EncodeError]) -> dict[str, object]:
        """The parameters handed to the struct, resolved in the enclosing ``scope``."""
        params = {}
        for name, path in self.bindings.items():
            value = resolve(scope, path)
            if value is MISSING:
                raise error(f"parameter {name} needs {'.'.join(path)}, which is not available here")
            params[name] = value
        return params

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[T, int]:
        return self.inner.read_top(data, pos, end, self.params(scope, DecodeError))

    def write(self, out: bytearray, value: T, scope: Scope) -> None:
        self.inner.write_top(out, value, self.params(scope, EncodeError))
