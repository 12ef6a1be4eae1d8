"""Annotations for the TLS presentation language's basic types, to declare struct fields with."""

from __future__ import annotations

from typing import Annotated

from .primitives import OPAQUE, U8, U16, U32, U64, ZeroPadding

Uint8 = Annotated[int, U8]
Uint16 = Annotated[int, U16]
Uint32 = Annotated[int, U32]
Uint64 = Annotated[int, U64]

#: ``opaque data<V>``.
Opaque = Annotated[bytes, OPAQUE]

#: ``opaque padding[length_of_padding]``: the rest of the input, all zero; the value is its length.
Padding = Annotated[int, ZeroPadding()]
