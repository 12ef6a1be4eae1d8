from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Signature(_message.Message):
    __slots__ = ("ecdsa_compact", "wallet_ecdsa_compact")
    class ECDSACompact(_message.Message):
        __slots__ = ("bytes", "recovery")
        BYTES_FIELD_NUMBER: _ClassVar[int]
        RECOVERY_FIELD_NUMBER: _ClassVar[int]
        bytes: bytes
        recovery: int
        def __init__(self, bytes: _Optional[bytes] = ..., recovery: _Optional[int] = ...) -> None: ...
    class WalletECDSACompact(_message.Message):
        __slots__ = ("bytes", "recovery")
        BYTES_FIELD_NUMBER: _ClassVar[int]
        RECOVERY_FIELD_NUMBER: _ClassVar[int]
        bytes: bytes
        recovery: int
        def __init__(self, bytes: _Optional[bytes] = ..., recovery: _Optional[int] = ...) -> None: ...
    ECDSA_COMPACT_FIELD_NUMBER: _ClassVar[int]
    WALLET_ECDSA_COMPACT_FIELD_NUMBER: _ClassVar[int]
    ecdsa_compact: Signature.ECDSACompact
    wallet_ecdsa_compact: Signature.WalletECDSACompact
    def __init__(self, ecdsa_compact: _Optional[_Union[Signature.ECDSACompact, _Mapping]] = ..., wallet_ecdsa_compact: _Optional[_Union[Signature.WalletECDSACompact, _Mapping]] = ...) -> None: ...

class SignedPublicKey(_message.Message):
    __slots__ = ("key_bytes", "signature")
    KEY_BYTES_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    key_bytes: bytes
    signature: Signature
    def __init__(self, key_bytes: _Optional[bytes] = ..., signature: _Optional[_Union[Signature, _Mapping]] = ...) -> None: ...
