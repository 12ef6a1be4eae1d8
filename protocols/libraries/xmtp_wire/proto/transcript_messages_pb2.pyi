from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GroupUpdated(_message.Message):
    __slots__ = ("initiated_by_inbox_id", "added_inboxes", "removed_inboxes", "metadata_field_changes", "left_inboxes", "added_admin_inboxes", "removed_admin_inboxes", "added_super_admin_inboxes", "removed_super_admin_inboxes")
    class Inbox(_message.Message):
        __slots__ = ("inbox_id",)
        INBOX_ID_FIELD_NUMBER: _ClassVar[int]
        inbox_id: str
        def __init__(self, inbox_id: _Optional[str] = ...) -> None: ...
    class MetadataFieldChange(_message.Message):
        __slots__ = ("field_name", "old_value", "new_value")
        FIELD_NAME_FIELD_NUMBER: _ClassVar[int]
        OLD_VALUE_FIELD_NUMBER: _ClassVar[int]
        NEW_VALUE_FIELD_NUMBER: _ClassVar[int]
        field_name: str
        old_value: str
        new_value: str
        def __init__(self, field_name: _Optional[str] = ..., old_value: _Optional[str] = ..., new_value: _Optional[str] = ...) -> None: ...
    INITIATED_BY_INBOX_ID_FIELD_NUMBER: _ClassVar[int]
    ADDED_INBOXES_FIELD_NUMBER: _ClassVar[int]
    REMOVED_INBOXES_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_CHANGES_FIELD_NUMBER: _ClassVar[int]
    LEFT_INBOXES_FIELD_NUMBER: _ClassVar[int]
    ADDED_ADMIN_INBOXES_FIELD_NUMBER: _ClassVar[int]
    REMOVED_ADMIN_INBOXES_FIELD_NUMBER: _ClassVar[int]
    ADDED_SUPER_ADMIN_INBOXES_FIELD_NUMBER: _ClassVar[int]
    REMOVED_SUPER_ADMIN_INBOXES_FIELD_NUMBER: _ClassVar[int]
    initiated_by_inbox_id: str
    added_inboxes: _containers.RepeatedCompositeFieldContainer[GroupUpdated.Inbox]
    removed_inboxes: _containers.RepeatedCompositeFieldContainer[GroupUpdated.Inbox]
    metadata_field_changes: _containers.RepeatedCompositeFieldContainer[GroupUpdated.MetadataFieldChange]
    left_inboxes: _containers.RepeatedCompositeFieldContainer[GroupUpdated.Inbox]
    added_admin_inboxes: _containers.RepeatedCompositeFieldContainer[GroupUpdated.Inbox]
    removed_admin_inboxes: _containers.RepeatedCompositeFieldContainer[GroupUpdated.Inbox]
    added_super_admin_inboxes: _containers.RepeatedCompositeFieldContainer[GroupUpdated.Inbox]
    removed_super_admin_inboxes: _containers.RepeatedCompositeFieldContainer[GroupUpdated.Inbox]
    def __init__(self, initiated_by_inbox_id: _Optional[str] = ..., added_inboxes: _Optional[_Iterable[_Union[GroupUpdated.Inbox, _Mapping]]] = ..., removed_inboxes: _Optional[_Iterable[_Union[GroupUpdated.Inbox, _Mapping]]] = ..., metadata_field_changes: _Optional[_Iterable[_Union[GroupUpdated.MetadataFieldChange, _Mapping]]] = ..., left_inboxes: _Optional[_Iterable[_Union[GroupUpdated.Inbox, _Mapping]]] = ..., added_admin_inboxes: _Optional[_Iterable[_Union[GroupUpdated.Inbox, _Mapping]]] = ..., removed_admin_inboxes: _Optional[_Iterable[_Union[GroupUpdated.Inbox, _Mapping]]] = ..., added_super_admin_inboxes: _Optional[_Iterable[_Union[GroupUpdated.Inbox, _Mapping]]] = ..., removed_super_admin_inboxes: _Optional[_Iterable[_Union[GroupUpdated.Inbox, _Mapping]]] = ...) -> None: ...
