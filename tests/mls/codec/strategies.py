"""Hypothesis strategies for any value the wire codec declares, derived from the declarations.

Each codec maps to the values it can encode; selects draw the case that the
fields drawn before them (or the struct's parameters) select, so every
generated value is consistent and encodable.  Sizes are kept small: the
structures nest deeply (an MLSMessage holds a commit holds an Add holds a
KeyPackage holds a LeafNode...).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from protocols.libraries.mls.codec import (
    Bound,
    ClosedEnum,
    Codec,
    DecodeError,
    Fixed,
    OpaqueV,
    OpenEnum,
    Optional,
    Select,
    StructCodec,
    Switch,
    UInt,
    Vector,
    ZeroPadding,
    codec_of,
)
from protocols.libraries.mls.codec.base import NO_PARAMS, DecodeScope, Params

_cache: dict[int, st.SearchStrategy[Any]] = {}


def values_of(spec: type | Codec[Any], params: Params = NO_PARAMS) -> st.SearchStrategy[Any]:
    """Values of a struct or variant class (or a codec), given the parameters it selects on."""
    codec = spec if isinstance(spec, Codec) else codec_of(spec)
    if params:
        return _uncached(codec, params)
    key = id(codec)
    if key not in _cache:
        _cache[key] = _uncached(codec, NO_PARAMS)
    return _cache[key]


def _uncached(codec: Codec[Any], params: Params) -> st.SearchStrategy[Any]:
    if isinstance(codec, StructCodec):
        return _struct(codec, params)
    if isinstance(codec, Switch):
        return _switch(codec)
    if isinstance(codec, Vector):
        return st.lists(values_of(codec.item), max_size=2).map(tuple)
    if isinstance(codec, Optional):
        return st.none() | values_of(codec.inner)
    return _leaf(codec)


def _leaf(codec: Codec[Any]) -> st.SearchStrategy[Any]:
    if isinstance(codec, ClosedEnum):
        return st.sampled_from(codec.enum)
    if isinstance(codec, OpenEnum):
        return st.sampled_from(codec.enum) | st.integers(0, codec.int_codec.limit)
    if isinstance(codec, UInt):
        return st.integers(0, codec.limit)
    if isinstance(codec, OpaqueV):
        return st.binary(max_size=6)
    if isinstance(codec, Fixed):
        return st.binary(min_size=codec.size, max_size=codec.size)
    if isinstance(codec, ZeroPadding):
        return st.integers(0, 5)
    raise TypeError(f"no strategy for {codec!r}")


def _switch(codec: Switch) -> st.SearchStrategy[Any]:
    options = [values_of(cls) for cls in codec.cases.values()]
    if codec.unknown is not None:
        carrier, tag_field = codec.unknown_codec()
        unused_tags = st.integers(1, codec.int_codec.limit).filter(lambda tag: tag not in codec.cases)
        options.append(_struct(carrier, NO_PARAMS, {tag_field: unused_tags}))
    return st.one_of(options)


def _struct(
    codec: StructCodec[Any], params: Params, fixed: dict[str, st.SearchStrategy[Any]] | None = None
) -> st.SearchStrategy[Any]:
    fields = codec.fields()
    overrides = fixed or {}

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        values: dict[str, object] = {}
        scope = DecodeScope(values, params)
        for name, field in fields:
            values[name] = draw(overrides[name] if name in overrides else _field(field, scope))
        return codec.cls(**values)

    return build()


def _field(field: Codec[Any], scope: DecodeScope) -> st.SearchStrategy[Any]:
    """A field's values; selects and bound structs depend on the fields drawn before them."""
    if isinstance(field, Select):
        case = field.codecs().get(field.key(scope, DecodeError))
        return st.none() if case is None else values_of(case)
    if isinstance(field, Bound):
        return values_of(field.inner, field.params(scope, DecodeError))
    return values_of(field)
