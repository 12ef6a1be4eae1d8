"""RFC 9420 wire codec: the TLS presentation language (RFC 8446 §3, RFC 9420 §2.1) as one declarative codec.

Every struct is an attrs class whose annotated fields are its wire layout;
:func:`encode` and :func:`decode` derive both directions from that one
declaration (like mls-rs's derived ``MlsEncode``/``MlsDecode``).  Decoding is
strict: truncation, overrunning lengths, trailing bytes, non-minimal or
too-large variable-length integers, undefined enum values and select cases
are refused with a :class:`DecodeError` naming the field path.
"""

from __future__ import annotations

from .aliases import Opaque, Padding, Uint8, Uint16, Uint32, Uint64
from .api import decode, encode
from .base import Codec
from .containers import Optional, Vector
from .errors import DecodeError, EncodeError
from .primitives import (
    OPAQUE,
    U8,
    U16,
    U32,
    U64,
    ClosedEnum,
    Fixed,
    OpaqueV,
    OpenEnum,
    UInt,
    Uint8Enum,
    Uint16Enum,
    ZeroPadding,
)
from .structs import Bind, Bound, StructCodec, codec_of
from .variants import Select, Switch, case, tag_of, unknown_case, variant
from .varint import VARINT_MAX, read_varint, write_varint

__all__ = [
    "OPAQUE",
    "U8",
    "U16",
    "U32",
    "U64",
    "VARINT_MAX",
    "Bind",
    "Bound",
    "ClosedEnum",
    "Codec",
    "DecodeError",
    "EncodeError",
    "Fixed",
    "Opaque",
    "OpaqueV",
    "OpenEnum",
    "Optional",
    "Padding",
    "Select",
    "StructCodec",
    "Switch",
    "UInt",
    "Uint8",
    "Uint8Enum",
    "Uint16",
    "Uint16Enum",
    "Uint32",
    "Uint64",
    "Vector",
    "ZeroPadding",
    "case",
    "codec_of",
    "decode",
    "encode",
    "read_varint",
    "tag_of",
    "unknown_case",
    "variant",
    "write_varint",
]
