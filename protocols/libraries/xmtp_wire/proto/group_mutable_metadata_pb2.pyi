from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GroupMutableMetadataV1(_message.Message):
    __slots__ = ("attributes", "admin_list", "super_admin_list")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ADMIN_LIST_FIELD_NUMBER: _ClassVar[int]
    SUPER_ADMIN_LIST_FIELD_NUMBER: _ClassVar[int]
    attributes: _containers.ScalarMap[str, str]
    admin_list: Inboxes
    super_admin_list: Inboxes
    def __init__(self, attributes: _Optional[_Mapping[str, str]] = ..., admin_list: _Optional[_Union[Inboxes, _Mapping]] = ..., super_admin_list: _Optional[_Union[Inboxes, _Mapping]] = ...) -> None: ...

class Inboxes(_message.Message):
    __slots__ = ("inbox_ids",)
    INBOX_IDS_FIELD_NUMBER: _ClassVar[int]
    inbox_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, inbox_ids: _Optional[_Iterable[str]] = ...) -> None: ...
