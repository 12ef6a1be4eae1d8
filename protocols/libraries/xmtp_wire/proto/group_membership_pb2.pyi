from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class GroupMembership(_message.Message):
    __slots__ = ("members", "failed_installations")
    class MembersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    FAILED_INSTALLATIONS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.ScalarMap[str, int]
    failed_installations: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, members: _Optional[_Mapping[str, int]] = ..., failed_installations: _Optional[_Iterable[bytes]] = ...) -> None: ...
