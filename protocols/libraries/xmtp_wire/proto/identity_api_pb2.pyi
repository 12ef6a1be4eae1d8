from protocols.libraries.xmtp_wire.proto import associations_pb2 as _associations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VerifySmartContractWalletSignaturesRequest(_message.Message):
    __slots__ = ("signatures",)
    SIGNATURES_FIELD_NUMBER: _ClassVar[int]
    signatures: _containers.RepeatedCompositeFieldContainer[VerifySmartContractWalletSignatureRequestSignature]
    def __init__(self, signatures: _Optional[_Iterable[_Union[VerifySmartContractWalletSignatureRequestSignature, _Mapping]]] = ...) -> None: ...

class VerifySmartContractWalletSignatureRequestSignature(_message.Message):
    __slots__ = ("account_id", "block_number", "signature", "hash")
    ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    BLOCK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    account_id: str
    block_number: int
    signature: bytes
    hash: bytes
    def __init__(self, account_id: _Optional[str] = ..., block_number: _Optional[int] = ..., signature: _Optional[bytes] = ..., hash: _Optional[bytes] = ...) -> None: ...

class VerifySmartContractWalletSignaturesResponse(_message.Message):
    __slots__ = ("responses",)
    class ValidationResponse(_message.Message):
        __slots__ = ("is_valid", "block_number", "error")
        IS_VALID_FIELD_NUMBER: _ClassVar[int]
        BLOCK_NUMBER_FIELD_NUMBER: _ClassVar[int]
        ERROR_FIELD_NUMBER: _ClassVar[int]
        is_valid: bool
        block_number: int
        error: str
        def __init__(self, is_valid: _Optional[bool] = ..., block_number: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    responses: _containers.RepeatedCompositeFieldContainer[VerifySmartContractWalletSignaturesResponse.ValidationResponse]
    def __init__(self, responses: _Optional[_Iterable[_Union[VerifySmartContractWalletSignaturesResponse.ValidationResponse, _Mapping]]] = ...) -> None: ...

class PublishIdentityUpdateRequest(_message.Message):
    __slots__ = ("identity_update",)
    IDENTITY_UPDATE_FIELD_NUMBER: _ClassVar[int]
    identity_update: _associations_pb2.IdentityUpdate
    def __init__(self, identity_update: _Optional[_Union[_associations_pb2.IdentityUpdate, _Mapping]] = ...) -> None: ...

class PublishIdentityUpdateResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetIdentityUpdatesRequest(_message.Message):
    __slots__ = ("requests",)
    class Request(_message.Message):
        __slots__ = ("inbox_id", "sequence_id")
        INBOX_ID_FIELD_NUMBER: _ClassVar[int]
        SEQUENCE_ID_FIELD_NUMBER: _ClassVar[int]
        inbox_id: str
        sequence_id: int
        def __init__(self, inbox_id: _Optional[str] = ..., sequence_id: _Optional[int] = ...) -> None: ...
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[GetIdentityUpdatesRequest.Request]
    def __init__(self, requests: _Optional[_Iterable[_Union[GetIdentityUpdatesRequest.Request, _Mapping]]] = ...) -> None: ...

class GetIdentityUpdatesResponse(_message.Message):
    __slots__ = ("responses",)
    class IdentityUpdateLog(_message.Message):
        __slots__ = ("sequence_id", "server_timestamp_ns", "update")
        SEQUENCE_ID_FIELD_NUMBER: _ClassVar[int]
        SERVER_TIMESTAMP_NS_FIELD_NUMBER: _ClassVar[int]
        UPDATE_FIELD_NUMBER: _ClassVar[int]
        sequence_id: int
        server_timestamp_ns: int
        update: _associations_pb2.IdentityUpdate
        def __init__(self, sequence_id: _Optional[int] = ..., server_timestamp_ns: _Optional[int] = ..., update: _Optional[_Union[_associations_pb2.IdentityUpdate, _Mapping]] = ...) -> None: ...
    class Response(_message.Message):
        __slots__ = ("inbox_id", "updates")
        INBOX_ID_FIELD_NUMBER: _ClassVar[int]
        UPDATES_FIELD_NUMBER: _ClassVar[int]
        inbox_id: str
        updates: _containers.RepeatedCompositeFieldContainer[GetIdentityUpdatesResponse.IdentityUpdateLog]
        def __init__(self, inbox_id: _Optional[str] = ..., updates: _Optional[_Iterable[_Union[GetIdentityUpdatesResponse.IdentityUpdateLog, _Mapping]]] = ...) -> None: ...
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    responses: _containers.RepeatedCompositeFieldContainer[GetIdentityUpdatesResponse.Response]
    def __init__(self, responses: _Optional[_Iterable[_Union[GetIdentityUpdatesResponse.Response, _Mapping]]] = ...) -> None: ...

class GetInboxIdsRequest(_message.Message):
    __slots__ = ("requests",)
    class Request(_message.Message):
        __slots__ = ("identifier", "identifier_kind")
        IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
        IDENTIFIER_KIND_FIELD_NUMBER: _ClassVar[int]
        identifier: str
        identifier_kind: _associations_pb2.IdentifierKind
        def __init__(self, identifier: _Optional[str] = ..., identifier_kind: _Optional[_Union[_associations_pb2.IdentifierKind, str]] = ...) -> None: ...
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[GetInboxIdsRequest.Request]
    def __init__(self, requests: _Optional[_Iterable[_Union[GetInboxIdsRequest.Request, _Mapping]]] = ...) -> None: ...

class GetInboxIdsResponse(_message.Message):
    __slots__ = ("responses",)
    class Response(_message.Message):
        __slots__ = ("identifier", "inbox_id", "identifier_kind")
        IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
        INBOX_ID_FIELD_NUMBER: _ClassVar[int]
        IDENTIFIER_KIND_FIELD_NUMBER: _ClassVar[int]
        identifier: str
        inbox_id: str
        identifier_kind: _associations_pb2.IdentifierKind
        def __init__(self, identifier: _Optional[str] = ..., inbox_id: _Optional[str] = ..., identifier_kind: _Optional[_Union[_associations_pb2.IdentifierKind, str]] = ...) -> None: ...
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    responses: _containers.RepeatedCompositeFieldContainer[GetInboxIdsResponse.Response]
    def __init__(self, responses: _Optional[_Iterable[_Union[GetInboxIdsResponse.Response, _Mapping]]] = ...) -> None: ...
