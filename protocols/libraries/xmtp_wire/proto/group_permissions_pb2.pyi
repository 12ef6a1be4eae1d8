from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GroupMutablePermissionsV1(_message.Message):
    __slots__ = ("policies",)
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    policies: PolicySet
    def __init__(self, policies: _Optional[_Union[PolicySet, _Mapping]] = ...) -> None: ...

class PolicySet(_message.Message):
    __slots__ = ("add_member_policy", "remove_member_policy", "update_metadata_policy", "add_admin_policy", "remove_admin_policy", "update_permissions_policy")
    class UpdateMetadataPolicyEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: MetadataPolicy
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[MetadataPolicy, _Mapping]] = ...) -> None: ...
    ADD_MEMBER_POLICY_FIELD_NUMBER: _ClassVar[int]
    REMOVE_MEMBER_POLICY_FIELD_NUMBER: _ClassVar[int]
    UPDATE_METADATA_POLICY_FIELD_NUMBER: _ClassVar[int]
    ADD_ADMIN_POLICY_FIELD_NUMBER: _ClassVar[int]
    REMOVE_ADMIN_POLICY_FIELD_NUMBER: _ClassVar[int]
    UPDATE_PERMISSIONS_POLICY_FIELD_NUMBER: _ClassVar[int]
    add_member_policy: MembershipPolicy
    remove_member_policy: MembershipPolicy
    update_metadata_policy: _containers.MessageMap[str, MetadataPolicy]
    add_admin_policy: PermissionsUpdatePolicy
    remove_admin_policy: PermissionsUpdatePolicy
    update_permissions_policy: PermissionsUpdatePolicy
    def __init__(self, add_member_policy: _Optional[_Union[MembershipPolicy, _Mapping]] = ..., remove_member_policy: _Optional[_Union[MembershipPolicy, _Mapping]] = ..., update_metadata_policy: _Optional[_Mapping[str, MetadataPolicy]] = ..., add_admin_policy: _Optional[_Union[PermissionsUpdatePolicy, _Mapping]] = ..., remove_admin_policy: _Optional[_Union[PermissionsUpdatePolicy, _Mapping]] = ..., update_permissions_policy: _Optional[_Union[PermissionsUpdatePolicy, _Mapping]] = ...) -> None: ...

class MembershipPolicy(_message.Message):
    __slots__ = ("base", "and_condition", "any_condition")
    class BasePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        BASE_POLICY_UNSPECIFIED: _ClassVar[MembershipPolicy.BasePolicy]
        BASE_POLICY_ALLOW: _ClassVar[MembershipPolicy.BasePolicy]
        BASE_POLICY_DENY: _ClassVar[MembershipPolicy.BasePolicy]
        BASE_POLICY_ALLOW_IF_ADMIN_OR_SUPER_ADMIN: _ClassVar[MembershipPolicy.BasePolicy]
        BASE_POLICY_ALLOW_IF_SUPER_ADMIN: _ClassVar[MembershipPolicy.BasePolicy]
    BASE_POLICY_UNSPECIFIED: MembershipPolicy.BasePolicy
    BASE_POLICY_ALLOW: MembershipPolicy.BasePolicy
    BASE_POLICY_DENY: MembershipPolicy.BasePolicy
    BASE_POLICY_ALLOW_IF_ADMIN_OR_SUPER_ADMIN: MembershipPolicy.BasePolicy
    BASE_POLICY_ALLOW_IF_SUPER_ADMIN: MembershipPolicy.BasePolicy
    class AndCondition(_message.Message):
        __slots__ = ("policies",)
        POLICIES_FIELD_NUMBER: _ClassVar[int]
        policies: _containers.RepeatedCompositeFieldContainer[MembershipPolicy]
        def __init__(self, policies: _Optional[_Iterable[_Union[MembershipPolicy, _Mapping]]] = ...) -> None: ...
    class AnyCondition(_message.Message):
        __slots__ = ("policies",)
        POLICIES_FIELD_NUMBER: _ClassVar[int]
        policies: _containers.RepeatedCompositeFieldContainer[MembershipPolicy]
        def __init__(self, policies: _Optional[_Iterable[_Union[MembershipPolicy, _Mapping]]] = ...) -> None: ...
    BASE_FIELD_NUMBER: _ClassVar[int]
    AND_CONDITION_FIELD_NUMBER: _ClassVar[int]
    ANY_CONDITION_FIELD_NUMBER: _ClassVar[int]
    base: MembershipPolicy.BasePolicy
    and_condition: MembershipPolicy.AndCondition
    any_condition: MembershipPolicy.AnyCondition
    def __init__(self, base: _Optional[_Union[MembershipPolicy.BasePolicy, str]] = ..., and_condition: _Optional[_Union[MembershipPolicy.AndCondition, _Mapping]] = ..., any_condition: _Optional[_Union[MembershipPolicy.AnyCondition, _Mapping]] = ...) -> None: ...

class MetadataPolicy(_message.Message):
    __slots__ = ("base", "and_condition", "any_condition")
    class MetadataBasePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        METADATA_BASE_POLICY_UNSPECIFIED: _ClassVar[MetadataPolicy.MetadataBasePolicy]
        METADATA_BASE_POLICY_ALLOW: _ClassVar[MetadataPolicy.MetadataBasePolicy]
        METADATA_BASE_POLICY_DENY: _ClassVar[MetadataPolicy.MetadataBasePolicy]
        METADATA_BASE_POLICY_ALLOW_IF_ADMIN: _ClassVar[MetadataPolicy.MetadataBasePolicy]
        METADATA_BASE_POLICY_ALLOW_IF_SUPER_ADMIN: _ClassVar[MetadataPolicy.MetadataBasePolicy]
    METADATA_BASE_POLICY_UNSPECIFIED: MetadataPolicy.MetadataBasePolicy
    METADATA_BASE_POLICY_ALLOW: MetadataPolicy.MetadataBasePolicy
    METADATA_BASE_POLICY_DENY: MetadataPolicy.MetadataBasePolicy
    METADATA_BASE_POLICY_ALLOW_IF_ADMIN: MetadataPolicy.MetadataBasePolicy
    METADATA_BASE_POLICY_ALLOW_IF_SUPER_ADMIN: MetadataPolicy.MetadataBasePolicy
    class AndCondition(_message.Message):
        __slots__ = ("policies",)
        POLICIES_FIELD_NUMBER: _ClassVar[int]
        policies: _containers.RepeatedCompositeFieldContainer[MetadataPolicy]
        def __init__(self, policies: _Optional[_Iterable[_Union[MetadataPolicy, _Mapping]]] = ...) -> None: ...
    class AnyCondition(_message.Message):
        __slots__ = ("policies",)
        POLICIES_FIELD_NUMBER: _ClassVar[int]
        policies: _containers.RepeatedCompositeFieldContainer[MetadataPolicy]
        def __init__(self, policies: _Optional[_Iterable[_Union[MetadataPolicy, _Mapping]]] = ...) -> None: ...
    BASE_FIELD_NUMBER: _ClassVar[int]
    AND_CONDITION_FIELD_NUMBER: _ClassVar[int]
    ANY_CONDITION_FIELD_NUMBER: _ClassVar[int]
    base: MetadataPolicy.MetadataBasePolicy
    and_condition: MetadataPolicy.AndCondition
    any_condition: MetadataPolicy.AnyCondition
    def __init__(self, base: _Optional[_Union[MetadataPolicy.MetadataBasePolicy, str]] = ..., and_condition: _Optional[_Union[MetadataPolicy.AndCondition, _Mapping]] = ..., any_condition: _Optional[_Union[MetadataPolicy.AnyCondition, _Mapping]] = ...) -> None: ...

class PermissionsUpdatePolicy(_message.Message):
    __slots__ = ("base", "and_condition", "any_condition")
    class PermissionsBasePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        PERMISSIONS_BASE_POLICY_UNSPECIFIED: _ClassVar[PermissionsUpdatePolicy.PermissionsBasePolicy]
        PERMISSIONS_BASE_POLICY_DENY: _ClassVar[PermissionsUpdatePolicy.PermissionsBasePolicy]
        PERMISSIONS_BASE_POLICY_ALLOW_IF_ADMIN: _ClassVar[PermissionsUpdatePolicy.PermissionsBasePolicy]
        PERMISSIONS_BASE_POLICY_ALLOW_IF_SUPER_ADMIN: _ClassVar[PermissionsUpdatePolicy.PermissionsBasePolicy]
    PERMISSIONS_BASE_POLICY_UNSPECIFIED: PermissionsUpdatePolicy.PermissionsBasePolicy
    PERMISSIONS_BASE_POLICY_DENY: PermissionsUpdatePolicy.PermissionsBasePolicy
    PERMISSIONS_BASE_POLICY_ALLOW_IF_ADMIN: PermissionsUpdatePolicy.PermissionsBasePolicy
    PERMISSIONS_BASE_POLICY_ALLOW_IF_SUPER_ADMIN: PermissionsUpdatePolicy.PermissionsBasePolicy
    class AndCondition(_message.Message):
        __slots__ = ("policies",)
        POLICIES_FIELD_NUMBER: _ClassVar[int]
        policies: _containers.RepeatedCompositeFieldContainer[PermissionsUpdatePolicy]
        def __init__(self, policies: _Optional[_Iterable[_Union[PermissionsUpdatePolicy, _Mapping]]] = ...) -> None: ...
    class AnyCondition(_message.Message):
        __slots__ = ("policies",)
        POLICIES_FIELD_NUMBER: _ClassVar[int]
        policies: _containers.RepeatedCompositeFieldContainer[PermissionsUpdatePolicy]
        def __init__(self, policies: _Optional[_Iterable[_Union[PermissionsUpdatePolicy, _Mapping]]] = ...) -> None: ...
    BASE_FIELD_NUMBER: _ClassVar[int]
    AND_CONDITION_FIELD_NUMBER: _ClassVar[int]
    ANY_CONDITION_FIELD_NUMBER: _ClassVar[int]
    base: PermissionsUpdatePolicy.PermissionsBasePolicy
    and_condition: PermissionsUpdatePolicy.AndCondition
    any_condition: PermissionsUpdatePolicy.AnyCondition
    def __init__(self, base: _Optional[_Union[PermissionsUpdatePolicy.PermissionsBasePolicy, str]] = ..., and_condition: _Optional[_Union[PermissionsUpdatePolicy.AndCondition, _Mapping]] = ..., any_condition: _Optional[_Union[PermissionsUpdatePolicy.AnyCondition, _Mapping]] = ...) -> None: ...
