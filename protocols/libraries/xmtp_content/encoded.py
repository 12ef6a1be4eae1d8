"""EncodedContent: content bytes with their type, codec parameters, a fallback text and optional compression.

libxmtp v1.10.0 never compresses, but other XMTP clients may (the field is in
the protocol), so compressed content is inflated before a codec reads it.
"deflate" is zlib's format (RFC 1950), as xmtp-js writes it; "gzip" is RFC 1952.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Mapping

import attrs
from google.protobuf.message import DecodeError

from protocols.libraries.xmtp_content.content_type import ContentTypeId
from protocols.libraries.xmtp_content.errors import ContentTooLarge, MalformedContent, NotExpressible
from protocols.libraries.xmtp_wire.proto import content_pb2

#: Inflated content beyond this is refused rather than held in memory (a few bytes can inflate to gigabytes).
MAX_INFLATED_BYTES = 16 * 1024 * 1024
_WBITS = {"deflate": zlib.MAX_WBITS, "gzip": 16 + zlib.MAX_WBITS}


class Compression(enum.Enum):
    """The compression algorithms the protocol names; the values are the wire's enum numbers."""

    DEFLATE = content_pb2.COMPRESSION_DEFLATE
    GZIP = content_pb2.COMPRESSION_GZIP


def _frozen_parameters(given: Mapping[str, str]) -> Mapping[str, str]:
    return dict(sorted(given.items()))


@attrs.frozen
class EncodedContent:
    """One content as it travels.

    Attributes:
        type: the content type id, or None when the sender named none (libxmtp then cannot decode it either).
        content: the codec's bytes, compressed if ``compression`` says so.
        parameters: codec parameters (``encoding`` for text, ``reference`` for a reply ...).
        fallback: text a client shows when it has no codec for ``type``.
        compression: how ``content`` is compressed, or None.
    """

    type: ContentTypeId | None
    content: bytes
    parameters: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_parameters)
    fallback: str | None = None
    compression: Compression | None = None

    def inflated(self) -> bytes:
        """The content bytes with any compression undone."""
        if self.compression is None:
            return self.content
        inflater = zlib.decompressobj(_WBITS[self.compression.name.lower()])
        try:
            out = inflater.decompress(self.content, MAX_INFLATED_BYTES)
        except zlib.error as error:
            raise MalformedContent(f"content marked {self.compression.name} does not inflate: {error}") from error
        if inflater.unconsumed_tail:
            raise ContentTooLarge(f"compressed content inflates beyond {MAX_INFLATED_BYTES} bytes")
        return out

    def to_proto(self) -> content_pb2.EncodedContent:
        proto = content_pb2.EncodedContent(parameters=dict(self.parameters), content=self.content)
        if self.type is not None:
            proto.type.CopyFrom(self.type.to_proto())
        if self.fallback is not None:
            proto.fallback = self.fallback
        if self.compression is not None:
            proto.compression = self.compression.value
        return proto

    @classmethod
    def from_proto(cls, proto: content_pb2.EncodedContent) -> EncodedContent:
        compression = None
        if proto.HasField("compression"):
            try:
                compression = Compression(proto.compression)
            except ValueError as error:
                raise MalformedContent(f"unknown compression {proto.compression}") from error
        return cls(
            type=ContentTypeId.from_proto(proto.type) if proto.HasField("type") else None,
            content=proto.content,
            parameters=dict(proto.parameters),
            fallback=proto.fallback if proto.HasField("fallback") else None,
            compression=compression,
        )


def compress(content: EncodedContent, algorithm: Compression) -> EncodedContent:
    """``content`` with its bytes compressed by ``algorithm`` (for clients that ask for it; libxmtp never does)."""
    packer = zlib.compressobj(wbits=_WBITS[algorithm.name.lower()])
    packed = packer.compress(content.inflated()) + packer.flush()
    return attrs.evolve(content, content=packed, compression=algorithm)


def encode_content(content: EncodedContent) -> bytes:
    """The protobuf bytes of ``content``; parameters in key order, so equal contents give equal bytes."""
    try:
        return content.to_proto().SerializeToString(deterministic=True)
    except UnicodeEncodeError as error:
        raise NotExpressible(f"content with text that is not valid Unicode (a lone surrogate?): {error}") from error


def decode_content(data: bytes) -> EncodedContent:
    """Read EncodedContent bytes; :class:`MalformedContent` when they are not one."""
    try:
        proto = content_pb2.EncodedContent.FromString(data)
    except DecodeError as error:
        raise MalformedContent(f"not an EncodedContent: {error}") from error
    return EncodedContent.from_proto(proto)
