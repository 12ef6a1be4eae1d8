from protocols.libraries.xmtp_wire.proto import associations_pb2 as _associations_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WelcomeWrapperAlgorithm(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WELCOME_WRAPPER_ALGORITHM_UNSPECIFIED: _ClassVar[WelcomeWrapperAlgorithm]
    WELCOME_WRAPPER_ALGORITHM_CURVE25519: _ClassVar[WelcomeWrapperAlgorithm]
    WELCOME_WRAPPER_ALGORITHM_XWING_MLKEM_768_DRAFT_6: _ClassVar[WelcomeWrapperAlgorithm]
    WELCOME_WRAPPER_ALGORITHM_SYMMETRIC_KEY: _ClassVar[WelcomeWrapperAlgorithm]

class WelcomePointerWrapperAlgorithm(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WELCOME_POINTER_WRAPPER_ALGORITHM_UNSPECIFIED: _ClassVar[WelcomePointerWrapperAlgorithm]
    WELCOME_POINTER_WRAPPER_ALGORITHM_XWING_MLKEM_768_DRAFT_6: _ClassVar[WelcomePointerWrapperAlgorithm]

class CommitResult(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMMIT_RESULT_UNSPECIFIED: _ClassVar[CommitResult]
    COMMIT_RESULT_APPLIED: _ClassVar[CommitResult]
    COMMIT_RESULT_WRONG_EPOCH: _ClassVar[CommitResult]
    COMMIT_RESULT_UNDECRYPTABLE: _ClassVar[CommitResult]
    COMMIT_RESULT_INVALID: _ClassVar[CommitResult]
WELCOME_WRAPPER_ALGORITHM_UNSPECIFIED: WelcomeWrapperAlgorithm
WELCOME_WRAPPER_ALGORITHM_CURVE25519: WelcomeWrapperAlgorithm
WELCOME_WRAPPER_ALGORITHM_XWING_MLKEM_768_DRAFT_6: WelcomeWrapperAlgorithm
WELCOME_WRAPPER_ALGORITHM_SYMMETRIC_KEY: WelcomeWrapperAlgorithm
WELCOME_POINTER_WRAPPER_ALGORITHM_UNSPECIFIED: WelcomePointerWrapperAlgorithm
WELCOME_POINTER_WRAPPER_ALGORITHM_XWING_MLKEM_768_DRAFT_6: WelcomePointerWrapperAlgorithm
COMMIT_RESULT_UNSPECIFIED: CommitResult
COMMIT_RESULT_APPLIED: CommitResult
COMMIT_RESULT_WRONG_EPOCH: CommitResult
COMMIT_RESULT_UNDECRYPTABLE: CommitResult
COMMIT_RESULT_INVALID: CommitResult

class PlaintextCommitLogEntry(_message.Message):
    __slots__ = ("group_id", "commit_sequence_id", "last_epoch_authenticator", "commit_result", "applied_epoch_number", "applied_epoch_authenticator")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    COMMIT_SEQUENCE_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_EPOCH_AUTHENTICATOR_FIELD_NUMBER: _ClassVar[int]
    COMMIT_RESULT_FIELD_NUMBER: _ClassVar[int]
    APPLIED_EPOCH_NUMBER_FIELD_NUMBER: _ClassVar[int]
    APPLIED_EPOCH_AUTHENTICATOR_FIELD_NUMBER: _ClassVar[int]
    group_id: bytes
    commit_sequence_id: int
    last_epoch_authenticator: bytes
    commit_result: CommitResult
    applied_epoch_number: int
    applied_epoch_authenticator: bytes
    def __init__(self, group_id: _Optional[bytes] = ..., commit_sequence_id: _Optional[int] = ..., last_epoch_authenticator: _Optional[bytes] = ..., commit_result: _Optional[_Union[CommitResult, str]] = ..., applied_epoch_number: _Optional[int] = ..., applied_epoch_authenticator: _Optional[bytes] = ...) -> None: ...

class CommitLogEntry(_message.Message):
    __slots__ = ("sequence_id", "serialized_commit_log_entry", "signature")
    SEQUENCE_ID_FIELD_NUMBER: _ClassVar[int]
    SERIALIZED_COMMIT_LOG_ENTRY_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    sequence_id: int
    serialized_commit_log_entry: bytes
    signature: _associations_pb2.RecoverableEd25519Signature
    def __init__(self, sequence_id: _Optional[int] = ..., serialized_commit_log_entry: _Optional[bytes] = ..., signature: _Optional[_Union[_associations_pb2.RecoverableEd25519Signature, _Mapping]] = ...) -> None: ...
