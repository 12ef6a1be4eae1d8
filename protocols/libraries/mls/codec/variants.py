"""Selects: ``select (tag) { case ...: ... }`` as tagged unions and context-dependent fields.

RFC 9420 uses ``select`` two ways, and each has its codec:

* the tag is written just before the case (``Proposal``, ``Sender``,
  ``MLSMessage``): :class:`Switch`.  A variant declared once as a class
  hierarchy uses :func:`variant` on the base and :func:`case` on each case
  class; a field whose cases are unrelated classes uses ``Switch`` directly.
* the tag is a field read earlier, possibly of another struct
  (``PublicMessage.membership_tag`` on ``content.sender.sender_type``): :class:`Select`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import IntEnum
from typing import Any, TypeVar

import attrs

from .base import MISSING, NO_PARAMS, Codec, Scope, resolve
from .errors import DecodeError, EncodeError
from .primitives import check_int, width_of
from .structs import CLASS_CODECS, StructCodec, codec_of

C = TypeVar("C", bound=type)

#: Tags no sender may use: every RFC 9420 registry reserves 0.
RESERVED_TAGS = frozenset({0})


class Switch(Codec[Any]):
    """A tag of ``enum``'s width, then the case it selects (``T type; select (type) {...}``).

    ``cases`` maps each tag to the class written after it.  An optional
    ``unknown`` class carries any other (non-reserved) tag as its first field
    and the rest as its remaining fields, so unknown proposal or credential
    types survive a decode/encode round trip.
    """

    __slots__ = ("_case_codecs", "_tags_by_class", "cases", "enum", "int_codec", "name", "unknown")

    def __init__(self, enum: type[IntEnum], cases: Mapping[int, type] | None = None, *, name: str = "") -> None:
        self.enum = enum
        self.int_codec = width_of(enum)
        self.name = name or enum.__name__
        self.cases: dict[int, type] = {}
        self.unknown: type | None = None
        self._case_codecs: dict[int, Codec[Any]] = {}
        self._tags_by_class: dict[type, int] = {}
        for tag, cls in (cases or {}).items():
            self.add_case(tag, cls)

    def add_case(self, tag: int, cls: type) -> None:
        if tag in self.cases:
            raise TypeError(f"{self.name}: tag {tag} is declared twice ({self.cases[tag].__name__}, {cls.__name__})")
        self.cases[tag] = cls
        self._tags_by_class[cls] = tag

    def set_unknown(self, cls: type) -> None:
        if not attrs.has(cls) or not attrs.fields(cls):
            raise TypeError(f"{cls.__name__} must be an attrs class whose first field holds the tag")
        self.unknown = cls

    def _case_codec(self, tag: int) -> Codec[Any]:
        codec = self._case_codecs.get(tag)
        if codec is None:
            codec = self._case_codecs[tag] = codec_of(self.cases[tag])
        return codec

    def unknown_codec(self) -> tuple[StructCodec[Any], str]:
        """The struct codec of the unknown-tag carrier, and the name of its tag field."""
        codec = codec_of(self.unknown)
        if not isinstance(codec, StructCodec):
            raise TypeError(f"{self.name} has no unknown-tag carrier")
        return codec, codec.fields()[0][0]

    def tag_of(self, value: object) -> int:
        """The tag ``value`` is written with; :class:`EncodeError` if it is no case of this select."""
        tag = self._tags_by_class.get(type(value))
        if tag is not None:
            return tag
        if self.unknown is not None and isinstance(value, self.unknown):
            _, tag_field = self.unknown_codec()
            tag = check_int(getattr(value, tag_field), self.int_codec.limit, f"{self.name} tag")
            if tag in self.cases or tag in RESERVED_TAGS:
                known = "reserved" if tag in RESERVED_TAGS else f"the tag of {self.cases[tag].__name__}"
                raise EncodeError(f"{type(value).__name__}.{tag_field} is {tag}, {known}")
            return tag
        # Cases may be variant bases (FramedContent's Proposal): match by isinstance.
        for tag, cls in self.cases.items():
            if isinstance(value, cls):
                return tag
        raise EncodeError(f"{type(value).__name__} is not a case of {self.name}")

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[Any, int]:
        tag, after = self.int_codec.read(data, pos, end, scope)
        if tag in self.cases:
            return self._case_codec(tag).read(data, after, end, scope)
        if self.unknown is None or tag in RESERVED_TAGS:
            kind = "reserved" if tag in RESERVED_TAGS else "unknown"
            raise DecodeError(f"{kind} {self.enum.__name__} {tag}", pos)
        codec, tag_field = self.unknown_codec()
        return codec.read_fields(data, after, end, NO_PARAMS, {tag_field: tag})

    def write(self, out: bytearray, value: Any, scope: Scope) -> None:
        tag = self.tag_of(value)
        self.int_codec.write(out, tag, scope)
        if tag in self.cases:
            self._case_codec(tag).write(out, value, scope)
        else:
            codec, tag_field = self.unknown_codec()
            codec.write_fields(out, value, NO_PARAMS, skip=frozenset({tag_field}))


def variant(enum: type[IntEnum]) -> Callable[[C], C]:
    """Declare ``base`` as a select on an ``enum`` tag; its cases register with :func:`case`."""

    def declare(base: C) -> C:
        CLASS_CODECS[base] = Switch(enum, name=base.__name__)
        return base

    return declare


def _switch_of(cls: type) -> Switch:
    for base in cls.__mro__[1:]:
        codec = CLASS_CODECS.get(base)
        if isinstance(codec, Switch):
            return codec
    raise TypeError(f"{cls.__name__} does not subclass a class declared with @variant")


def case(tag: int) -> Callable[[C], C]:
    """Register an attrs class as the case ``tag`` of the variant it subclasses."""

    def register(cls: C) -> C:
        _switch_of(cls).add_case(tag, cls)
        return cls

    return register


def unknown_case(cls: C) -> C:
    """Register an attrs class as the carrier of the variant's unknown tags (first field: the tag)."""
    _switch_of(cls).set_unknown(cls)
    return cls


def tag_of(value: object) -> int:
    """The tag a variant case is written with (``Add`` → ``ProposalType.ADD``)."""
    return _switch_of(type(value)).tag_of(value)


class Select(Codec[Any]):
    """A field present or shaped according to a value read earlier (``select (Struct.field) {...}``).

    ``selector`` is a dotted path: its first name is a field of the same struct
    or a parameter, the rest are attributes.  The value is an int (an enum) or
    a variant case, whose tag is used.  ``cases`` maps a selector value to the
    field's type; values in ``empty`` mean ``struct{}`` (the field is ``None``);
    any other value is refused.
    """

    __slots__ = ("_codecs", "case_forms", "empty", "path", "selector")

    uses_scope = True

    def __init__(self, selector: str, cases: Mapping[int, object], empty: Iterable[int] = ()) -> None:
        self.selector = selector
        self.path = tuple(selector.split("."))
        self.case_forms = dict(cases)
        self.empty = frozenset(empty)
        self._codecs: dict[int, Codec[Any]] | None = None

    def codecs(self) -> dict[int, Codec[Any]]:
        if self._codecs is None:
            self._codecs = {tag: codec_of(form) for tag, form in self.case_forms.items()}
        return self._codecs

    def key(self, scope: Scope, error: type[DecodeError] | type[EncodeError]) -> int:
        """The selector's value in ``scope``, as an int tag."""
        value = resolve(scope, self.path)
        if value is MISSING:
            raise error(f"select ({self.selector}) cannot be resolved: pass it as a parameter")
        if isinstance(value, int):
            return value
        try:
            return tag_of(value)
        except TypeError as wrong:
            raise error(f"select ({self.selector}) is a {type(value).__name__}, not a tag") from wrong

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[Any, int]:
        key = self.key(scope, DecodeError)
        codec = self.codecs().get(key)
        if codec is not None:
            return codec.read(data, pos, end, scope)
        if key in self.empty:
            return None, pos
        raise DecodeError(f"no case for {self.selector} = {key}", pos)

    def write(self, out: bytearray, value: Any, scope: Scope) -> None:
        key = self.key(scope, EncodeError)
        codec = self.codecs().get(key)
        if codec is not None:
            if value is None:
                raise EncodeError(f"must be present when {self.selector} = {key}")
            codec.write(out, value, scope)
        elif key not in self.empty:
            raise EncodeError(f"no case for {self.selector} = {key}")
        elif value is not None:
            raise EncodeError(f"must be None when {self.selector} = {key}")
