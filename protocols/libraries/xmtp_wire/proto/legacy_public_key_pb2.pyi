from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UnsignedPublicKey(_message.Message):
    __slots__ = ("created_ns", "secp256k1_uncompressed")
    class Secp256k1Uncompressed(_message.Message):
        __slots__ = ("bytes",)
        BYTES_FIELD_NUMBER: _ClassVar[int]
        bytes: bytes
        def __init__(self, bytes: _Optional[bytes] = ...) -> None: ...
    CREATED_NS_FIELD_NUMBER: _ClassVar[int]
    SECP256K1_UNCOMPRESSED_FIELD_NUMBER: _ClassVar[int]
    created_ns: int
    secp256k1_uncompressed: UnsignedPublicKey.Secp256k1Uncompressed
    def __init__(self, created_ns: _Optional[int] = ..., secp256k1_uncompressed: _Optional[_Union[UnsignedPublicKey.Secp256k1Uncompressed, _Mapping]] = ...) -> None: ...
