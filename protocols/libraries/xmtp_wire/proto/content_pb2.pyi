from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Compression(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPRESSION_DEFLATE: _ClassVar[Compression]
    COMPRESSION_GZIP: _ClassVar[Compression]
COMPRESSION_DEFLATE: Compression
COMPRESSION_GZIP: Compression

class ContentTypeId(_message.Message):
    __slots__ = ("authority_id", "type_id", "version_major", "version_minor")
    AUTHORITY_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_MAJOR_FIELD_NUMBER: _ClassVar[int]
    VERSION_MINOR_FIELD_NUMBER: _ClassVar[int]
    authority_id: str
    type_id: str
    version_major: int
    version_minor: int
    def __init__(self, authority_id: _Optional[str] = ..., type_id: _Optional[str] = ..., version_major: _Optional[int] = ..., version_minor: _Optional[int] = ...) -> None: ...

class EncodedContent(_message.Message):
    __slots__ = ("type", "parameters", "fallback", "compression", "content")
    class ParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_FIELD_NUMBER: _ClassVar[int]
    COMPRESSION_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    type: ContentTypeId
    parameters: _containers.ScalarMap[str, str]
    fallback: str
    compression: Compression
    content: bytes
    def __init__(self, type: _Optional[_Union[ContentTypeId, _Mapping]] = ..., parameters: _Optional[_Mapping[str, str]] = ..., fallback: _Optional[str] = ..., compression: _Optional[_Union[Compression, str]] = ..., content: _Optional[bytes] = ...) -> None: ...

class PlaintextEnvelope(_message.Message):
    __slots__ = ("v1", "v2")
    class V1(_message.Message):
        __slots__ = ("content", "idempotency_key")
        CONTENT_FIELD_NUMBER: _ClassVar[int]
        IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
        content: bytes
        idempotency_key: str
        def __init__(self, content: _Optional[bytes] = ..., idempotency_key: _Optional[str] = ...) -> None: ...
    class V2(_message.Message):
        __slots__ = ("idempotency_key", "content")
        IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
        CONTENT_FIELD_NUMBER: _ClassVar[int]
        idempotency_key: str
        content: bytes
        def __init__(self, idempotency_key: _Optional[str] = ..., content: _Optional[bytes] = ...) -> None: ...
    V1_FIELD_NUMBER: _ClassVar[int]
    V2_FIELD_NUMBER: _ClassVar[int]
    v1: PlaintextEnvelope.V1
    v2: PlaintextEnvelope.V2
    def __init__(self, v1: _Optional[_Union[PlaintextEnvelope.V1, _Mapping]] = ..., v2: _Optional[_Union[PlaintextEnvelope.V2, _Mapping]] = ...) -> None: ...
