from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConversationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONVERSATION_TYPE_UNSPECIFIED: _ClassVar[ConversationType]
    CONVERSATION_TYPE_GROUP: _ClassVar[ConversationType]
    CONVERSATION_TYPE_DM: _ClassVar[ConversationType]
    CONVERSATION_TYPE_SYNC: _ClassVar[ConversationType]
    CONVERSATION_TYPE_ONESHOT: _ClassVar[ConversationType]
CONVERSATION_TYPE_UNSPECIFIED: ConversationType
CONVERSATION_TYPE_GROUP: ConversationType
CONVERSATION_TYPE_DM: ConversationType
CONVERSATION_TYPE_SYNC: ConversationType
CONVERSATION_TYPE_ONESHOT: ConversationType

class GroupMetadataV1(_message.Message):
    __slots__ = ("conversation_type", "creator_account_address", "creator_inbox_id", "dm_members")
    CONVERSATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    CREATOR_ACCOUNT_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    CREATOR_INBOX_ID_FIELD_NUMBER: _ClassVar[int]
    DM_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    conversation_type: ConversationType
    creator_account_address: str
    creator_inbox_id: str
    dm_members: DmMembers
    def __init__(self, conversation_type: _Optional[_Union[ConversationType, str]] = ..., creator_account_address: _Optional[str] = ..., creator_inbox_id: _Optional[str] = ..., dm_members: _Optional[_Union[DmMembers, _Mapping]] = ...) -> None: ...

class Inbox(_message.Message):
    __slots__ = ("inbox_id",)
    INBOX_ID_FIELD_NUMBER: _ClassVar[int]
    inbox_id: str
    def __init__(self, inbox_id: _Optional[str] = ...) -> None: ...

class DmMembers(_message.Message):
    __slots__ = ("dm_member_one", "dm_member_two")
    DM_MEMBER_ONE_FIELD_NUMBER: _ClassVar[int]
    DM_MEMBER_TWO_FIELD_NUMBER: _ClassVar[int]
    dm_member_one: Inbox
    dm_member_two: Inbox
    def __init__(self, dm_member_one: _Optional[_Union[Inbox, _Mapping]] = ..., dm_member_two: _Optional[_Union[Inbox, _Mapping]] = ...) -> None: ...
