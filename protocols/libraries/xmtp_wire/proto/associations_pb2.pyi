from protocols.libraries.xmtp_wire.proto import legacy_keys_pb2 as _legacy_keys_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class IdentifierKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IDENTIFIER_KIND_UNSPECIFIED: _ClassVar[IdentifierKind]
    IDENTIFIER_KIND_ETHEREUM: _ClassVar[IdentifierKind]
    IDENTIFIER_KIND_PASSKEY: _ClassVar[IdentifierKind]
IDENTIFIER_KIND_UNSPECIFIED: IdentifierKind
IDENTIFIER_KIND_ETHEREUM: IdentifierKind
IDENTIFIER_KIND_PASSKEY: IdentifierKind

class RecoverableEcdsaSignature(_message.Message):
    __slots__ = ("bytes",)
    BYTES_FIELD_NUMBER: _ClassVar[int]
    bytes: bytes
    def __init__(self, bytes: _Optional[bytes] = ...) -> None: ...

class RecoverableEd25519Signature(_message.Message):
    __slots__ = ("bytes", "public_key")
    BYTES_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    bytes: bytes
    public_key: bytes
    def __init__(self, bytes: _Optional[bytes] = ..., public_key: _Optional[bytes] = ...) -> None: ...

class SmartContractWalletSignature(_message.Message):
    __slots__ = ("account_id", "block_number", "signature")
    ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    BLOCK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    account_id: str
    block_number: int
    signature: bytes
    def __init__(self, account_id: _Optional[str] = ..., block_number: _Optional[int] = ..., signature: _Optional[bytes] = ...) -> None: ...

class RecoverablePasskeySignature(_message.Message):
    __slots__ = ("public_key", "signature", "authenticator_data", "client_data_json")
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    AUTHENTICATOR_DATA_FIELD_NUMBER: _ClassVar[int]
    CLIENT_DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    public_key: bytes
    signature: bytes
    authenticator_data: bytes
    client_data_json: bytes
    def __init__(self, public_key: _Optional[bytes] = ..., signature: _Optional[bytes] = ..., authenticator_data: _Optional[bytes] = ..., client_data_json: _Optional[bytes] = ...) -> None: ...

class LegacyDelegatedSignature(_message.Message):
    __slots__ = ("delegated_key", "signature")
    DELEGATED_KEY_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    delegated_key: _legacy_keys_pb2.SignedPublicKey
    signature: RecoverableEcdsaSignature
    def __init__(self, delegated_key: _Optional[_Union[_legacy_keys_pb2.SignedPublicKey, _Mapping]] = ..., signature: _Optional[_Union[RecoverableEcdsaSignature, _Mapping]] = ...) -> None: ...

class Signature(_message.Message):
    __slots__ = ("erc_191", "erc_6492", "installation_key", "delegated_erc_191", "passkey")
    ERC_191_FIELD_NUMBER: _ClassVar[int]
    ERC_6492_FIELD_NUMBER: _ClassVar[int]
    INSTALLATION_KEY_FIELD_NUMBER: _ClassVar[int]
    DELEGATED_ERC_191_FIELD_NUMBER: _ClassVar[int]
    PASSKEY_FIELD_NUMBER: _ClassVar[int]
    erc_191: RecoverableEcdsaSignature
    erc_6492: SmartContractWalletSignature
    installation_key: RecoverableEd25519Signature
    delegated_erc_191: LegacyDelegatedSignature
    passkey: RecoverablePasskeySignature
    def __init__(self, erc_191: _Optional[_Union[RecoverableEcdsaSignature, _Mapping]] = ..., erc_6492: _Optional[_Union[SmartContractWalletSignature, _Mapping]] = ..., installation_key: _Optional[_Union[RecoverableEd25519Signature, _Mapping]] = ..., delegated_erc_191: _Optional[_Union[LegacyDelegatedSignature, _Mapping]] = ..., passkey: _Optional[_Union[RecoverablePasskeySignature, _Mapping]] = ...) -> None: ...

class MemberIdentifier(_message.Message):
    __slots__ = ("ethereum_address", "installation_public_key", "passkey")
    ETHEREUM_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    INSTALLATION_PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    PASSKEY_FIELD_NUMBER: _ClassVar[int]
    ethereum_address: str
    installation_public_key: bytes
    passkey: Passkey
    def __init__(self, ethereum_address: _Optional[str] = ..., installation_public_key: _Optional[bytes] = ..., passkey: _Optional[_Union[Passkey, _Mapping]] = ...) -> None: ...

class Passkey(_message.Message):
    __slots__ = ("key", "relying_party")
    KEY_FIELD_NUMBER: _ClassVar[int]
    RELYING_PARTY_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    relying_party: str
    def __init__(self, key: _Optional[bytes] = ..., relying_party: _Optional[str] = ...) -> None: ...

class Member(_message.Message):
    __slots__ = ("identifier", "added_by_entity", "client_timestamp_ns", "added_on_chain_id")
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    ADDED_BY_ENTITY_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TIMESTAMP_NS_FIELD_NUMBER: _ClassVar[int]
    ADDED_ON_CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    identifier: MemberIdentifier
    added_by_entity: MemberIdentifier
    client_timestamp_ns: int
    added_on_chain_id: int
    def __init__(self, identifier: _Optional[_Union[MemberIdentifier, _Mapping]] = ..., added_by_entity: _Optional[_Union[MemberIdentifier, _Mapping]] = ..., client_timestamp_ns: _Optional[int] = ..., added_on_chain_id: _Optional[int] = ...) -> None: ...

class CreateInbox(_message.Message):
    __slots__ = ("initial_identifier", "nonce", "initial_identifier_signature", "initial_identifier_kind", "relying_party")
    INITIAL_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    NONCE_FIELD_NUMBER: _ClassVar[int]
    INITIAL_IDENTIFIER_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    INITIAL_IDENTIFIER_KIND_FIELD_NUMBER: _ClassVar[int]
    RELYING_PARTY_FIELD_NUMBER: _ClassVar[int]
    initial_identifier: str
    nonce: int
    initial_identifier_signature: Signature
    initial_identifier_kind: IdentifierKind
    relying_party: str
    def __init__(self, initial_identifier: _Optional[str] = ..., nonce: _Optional[int] = ..., initial_identifier_signature: _Optional[_Union[Signature, _Mapping]] = ..., initial_identifier_kind: _Optional[_Union[IdentifierKind, str]] = ..., relying_party: _Optional[str] = ...) -> None: ...

class AddAssociation(_message.Message):
    __slots__ = ("new_member_identifier", "existing_member_signature", "new_member_signature", "relying_party")
    NEW_MEMBER_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    EXISTING_MEMBER_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    NEW_MEMBER_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    RELYING_PARTY_FIELD_NUMBER: _ClassVar[int]
    new_member_identifier: MemberIdentifier
    existing_member_signature: Signature
    new_member_signature: Signature
    relying_party: str
    def __init__(self, new_member_identifier: _Optional[_Union[MemberIdentifier, _Mapping]] = ..., existing_member_signature: _Optional[_Union[Signature, _Mapping]] = ..., new_member_signature: _Optional[_Union[Signature, _Mapping]] = ..., relying_party: _Optional[str] = ...) -> None: ...

class RevokeAssociation(_message.Message):
    __slots__ = ("member_to_revoke", "recovery_identifier_signature")
    MEMBER_TO_REVOKE_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_IDENTIFIER_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    member_to_revoke: MemberIdentifier
    recovery_identifier_signature: Signature
    def __init__(self, member_to_revoke: _Optional[_Union[MemberIdentifier, _Mapping]] = ..., recovery_identifier_signature: _Optional[_Union[Signature, _Mapping]] = ...) -> None: ...

class ChangeRecoveryAddress(_message.Message):
    __slots__ = ("new_recovery_identifier", "existing_recovery_identifier_signature", "new_recovery_identifier_kind", "relying_party")
    NEW_RECOVERY_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    EXISTING_RECOVERY_IDENTIFIER_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    NEW_RECOVERY_IDENTIFIER_KIND_FIELD_NUMBER: _ClassVar[int]
    RELYING_PARTY_FIELD_NUMBER: _ClassVar[int]
    new_recovery_identifier: str
    existing_recovery_identifier_signature: Signature
    new_recovery_identifier_kind: IdentifierKind
    relying_party: str
    def __init__(self, new_recovery_identifier: _Optional[str] = ..., existing_recovery_identifier_signature: _Optional[_Union[Signature, _Mapping]] = ..., new_recovery_identifier_kind: _Optional[_Union[IdentifierKind, str]] = ..., relying_party: _Optional[str] = ...) -> None: ...

class IdentityAction(_message.Message):
    __slots__ = ("create_inbox", "add", "revoke", "change_recovery_address")
    CREATE_INBOX_FIELD_NUMBER: _ClassVar[int]
    ADD_FIELD_NUMBER: _ClassVar[int]
    REVOKE_FIELD_NUMBER: _ClassVar[int]
    CHANGE_RECOVERY_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    create_inbox: CreateInbox
    add: AddAssociation
    revoke: RevokeAssociation
    change_recovery_address: ChangeRecoveryAddress
    def __init__(self, create_inbox: _Optional[_Union[CreateInbox, _Mapping]] = ..., add: _Optional[_Union[AddAssociation, _Mapping]] = ..., revoke: _Optional[_Union[RevokeAssociation, _Mapping]] = ..., change_recovery_address: _Optional[_Union[ChangeRecoveryAddress, _Mapping]] = ...) -> None: ...

class IdentityUpdate(_message.Message):
    __slots__ = ("actions", "client_timestamp_ns", "inbox_id")
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TIMESTAMP_NS_FIELD_NUMBER: _ClassVar[int]
    INBOX_ID_FIELD_NUMBER: _ClassVar[int]
    actions: _containers.RepeatedCompositeFieldContainer[IdentityAction]
    client_timestamp_ns: int
    inbox_id: str
    def __init__(self, actions: _Optional[_Iterable[_Union[IdentityAction, _Mapping]]] = ..., client_timestamp_ns: _Optional[int] = ..., inbox_id: _Optional[str] = ...) -> None: ...

class MemberMap(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: MemberIdentifier
    value: Member
    def __init__(self, key: _Optional[_Union[MemberIdentifier, _Mapping]] = ..., value: _Optional[_Union[Member, _Mapping]] = ...) -> None: ...

class AssociationState(_message.Message):
    __slots__ = ("inbox_id", "members", "recovery_identifier", "seen_signatures", "recovery_identifier_kind", "relying_party")
    INBOX_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    SEEN_SIGNATURES_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_IDENTIFIER_KIND_FIELD_NUMBER: _ClassVar[int]
    RELYING_PARTY_FIELD_NUMBER: _ClassVar[int]
    inbox_id: str
    members: _containers.RepeatedCompositeFieldContainer[MemberMap]
    recovery_identifier: str
    seen_signatures: _containers.RepeatedScalarFieldContainer[bytes]
    recovery_identifier_kind: IdentifierKind
    relying_party: str
    def __init__(self, inbox_id: _Optional[str] = ..., members: _Optional[_Iterable[_Union[MemberMap, _Mapping]]] = ..., recovery_identifier: _Optional[str] = ..., seen_signatures: _Optional[_Iterable[bytes]] = ..., recovery_identifier_kind: _Optional[_Union[IdentifierKind, str]] = ..., relying_party: _Optional[str] = ...) -> None: ...

class AssociationStateDiff(_message.Message):
    __slots__ = ("new_members", "removed_members")
    NEW_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    REMOVED_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    new_members: _containers.RepeatedCompositeFieldContainer[MemberIdentifier]
    removed_members: _containers.RepeatedCompositeFieldContainer[MemberIdentifier]
    def __init__(self, new_members: _Optional[_Iterable[_Union[MemberIdentifier, _Mapping]]] = ..., removed_members: _Optional[_Iterable[_Union[MemberIdentifier, _Mapping]]] = ...) -> None: ...
