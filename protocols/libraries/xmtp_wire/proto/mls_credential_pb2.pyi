from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class MlsCredential(_message.Message):
    __slots__ = ("inbox_id",)
    INBOX_ID_FIELD_NUMBER: _ClassVar[int]
    inbox_id: str
    def __init__(self, inbox_id: _Optional[str] = ...) -> None: ...
