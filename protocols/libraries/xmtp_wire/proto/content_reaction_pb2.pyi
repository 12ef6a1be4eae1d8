from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReactionAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REACTION_ACTION_UNSPECIFIED: _ClassVar[ReactionAction]
    REACTION_ACTION_ADDED: _ClassVar[ReactionAction]
    REACTION_ACTION_REMOVED: _ClassVar[ReactionAction]

class ReactionSchema(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REACTION_SCHEMA_UNSPECIFIED: _ClassVar[ReactionSchema]
    REACTION_SCHEMA_UNICODE: _ClassVar[ReactionSchema]
    REACTION_SCHEMA_SHORTCODE: _ClassVar[ReactionSchema]
    REACTION_SCHEMA_CUSTOM: _ClassVar[ReactionSchema]
REACTION_ACTION_UNSPECIFIED: ReactionAction
REACTION_ACTION_ADDED: ReactionAction
REACTION_ACTION_REMOVED: ReactionAction
REACTION_SCHEMA_UNSPECIFIED: ReactionSchema
REACTION_SCHEMA_UNICODE: ReactionSchema
REACTION_SCHEMA_SHORTCODE: ReactionSchema
REACTION_SCHEMA_CUSTOM: ReactionSchema

class ReactionV2(_message.Message):
    __slots__ = ("reference", "reference_inbox_id", "action", "content", "schema")
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_INBOX_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    reference: str
    reference_inbox_id: str
    action: ReactionAction
    content: str
    schema: ReactionSchema
    def __init__(self, reference: _Optional[str] = ..., reference_inbox_id: _Optional[str] = ..., action: _Optional[_Union[ReactionAction, str]] = ..., content: _Optional[str] = ..., schema: _Optional[_Union[ReactionSchema, str]] = ...) -> None: ...
