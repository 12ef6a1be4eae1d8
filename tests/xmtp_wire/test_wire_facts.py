"""A few facts of the XMTP v3 wire, written down from xmtp/proto at a7255163 (the revision libxmtp v1.10.0 pins).

Real clients address methods by ``/<package>.<Service>/<Method>`` and read
messages by field number, so a renamed package or a renumbered field would
break every client silently.  The expectations are literals on purpose:
they come from the upstream definitions, not from our sources.
"""

from __future__ import annotations

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from protocols.libraries.xmtp_wire.proto import (
    associations_pb2,
    content_pb2,
    content_reaction_pb2,
    group_membership_pb2,
    group_metadata_pb2,
    group_mutable_metadata_pb2,
    group_permissions_pb2,
    identity_api_pb2,
    identity_api_pb2_grpc,
    mls_api_pb2,
    mls_api_pb2_grpc,
    mls_contents_pb2,
    transcript_messages_pb2,
)

MLS_API_METHODS = {
    "/xmtp.mls.api.v1.MlsApi/SendGroupMessages": (
        False,
        "xmtp.mls.api.v1.SendGroupMessagesRequest",
        "google.protobuf.Empty",
    ),
    "/xmtp.mls.api.v1.MlsApi/SendWelcomeMessages": (
        False,
        "xmtp.mls.api.v1.SendWelcomeMessagesRequest",
        "google.protobuf.Empty",
    ),
    "/xmtp.mls.api.v1.MlsApi/RegisterInstallation": (
        False,
        "xmtp.mls.api.v1.RegisterInstallationRequest",
        "xmtp.mls.api.v1.RegisterInstallationResponse",
    ),
    "/xmtp.mls.api.v1.MlsApi/UploadKeyPackage": (
        False,
        "xmtp.mls.api.v1.UploadKeyPackageRequest",
        "google.protobuf.Empty",
    ),
    "/xmtp.mls.api.v1.MlsApi/FetchKeyPackages": (
        False,
        "xmtp.mls.api.v1.FetchKeyPackagesRequest",
        "xmtp.mls.api.v1.FetchKeyPackagesResponse",
    ),
    "/xmtp.mls.api.v1.MlsApi/RevokeInstallation": (
        False,
        "xmtp.mls.api.v1.RevokeInstallationRequest",
        "google.protobuf.Empty",
    ),
    "/xmtp.mls.api.v1.MlsApi/GetIdentityUpdates": (
        False,
        "xmtp.mls.api.v1.GetIdentityUpdatesRequest",
        "xmtp.mls.api.v1.GetIdentityUpdatesResponse",
    ),
    "/xmtp.mls.api.v1.MlsApi/QueryGroupMessages": (
        False,
        "xmtp.mls.api.v1.QueryGroupMessagesRequest",
        "xmtp.mls.api.v1.QueryGroupMessagesResponse",
    ),
    "/xmtp.mls.api.v1.MlsApi/QueryWelcomeMessages": (
        False,
        "xmtp.mls.api.v1.QueryWelcomeMessagesRequest",
        "xmtp.mls.api.v1.QueryWelcomeMessagesResponse",
    ),
    "/xmtp.mls.api.v1.MlsApi/SubscribeGroupMessages": (
        True,
        "xmtp.mls.api.v1.SubscribeGroupMessagesRequest",
        "xmtp.mls.api.v1.GroupMessage",
    ),
    "/xmtp.mls.api.v1.MlsApi/SubscribeWelcomeMessages": (
        True,
        "xmtp.mls.api.v1.SubscribeWelcomeMessagesRequest",
        "xmtp.mls.api.v1.WelcomeMessage",
    ),
    "/xmtp.mls.api.v1.MlsApi/BatchPublishCommitLog": (
        False,
        "xmtp.mls.api.v1.BatchPublishCommitLogRequest",
        "google.protobuf.Empty",
    ),
    "/xmtp.mls.api.v1.MlsApi/BatchQueryCommitLog": (
        False,
        "xmtp.mls.api.v1.BatchQueryCommitLogRequest",
        "xmtp.mls.api.v1.BatchQueryCommitLogResponse",
    ),
    "/xmtp.mls.api.v1.MlsApi/GetNewestGroupMessage": (
        False,
        "xmtp.mls.api.v1.GetNewestGroupMessageRequest",
        "xmtp.mls.api.v1.GetNewestGroupMessageResponse",
    ),
}

IDENTITY_API_METHODS = {
    "/xmtp.identity.api.v1.IdentityApi/PublishIdentityUpdate": (
        False,
        "xmtp.identity.api.v1.PublishIdentityUpdateRequest",
        "xmtp.identity.api.v1.PublishIdentityUpdateResponse",
    ),
    "/xmtp.identity.api.v1.IdentityApi/GetIdentityUpdates": (
        False,
        "xmtp.identity.api.v1.GetIdentityUpdatesRequest",
        "xmtp.identity.api.v1.GetIdentityUpdatesResponse",
    ),
    "/xmtp.identity.api.v1.IdentityApi/GetInboxIds": (
        False,
        "xmtp.identity.api.v1.GetInboxIdsRequest",
        "xmtp.identity.api.v1.GetInboxIdsResponse",
    ),
    "/xmtp.identity.api.v1.IdentityApi/VerifySmartContractWalletSignatures": (
        False,
        "xmtp.identity.api.v1.VerifySmartContractWalletSignaturesRequest",
        "xmtp.identity.api.v1.VerifySmartContractWalletSignaturesResponse",
    ),
}


def _methods(file_descriptor, service: str) -> dict[str, tuple[bool, str, str]]:
    found = file_descriptor.services_by_name[service]
    return {
        f"/{found.full_name}/{method.name}": (
            method.server_streaming,
            method.input_type.full_name,
            method.output_type.full_name,
        )
        for method in found.methods
    }


def test_the_mls_api_has_every_method_clients_address() -> None:
    assert _methods(mls_api_pb2.DESCRIPTOR, "MlsApi") == MLS_API_METHODS


def test_the_identity_api_has_every_method_clients_address() -> None:
    assert _methods(identity_api_pb2.DESCRIPTOR, "IdentityApi") == IDENTITY_API_METHODS


def test_the_generated_servicers_route_the_same_paths() -> None:
    """The generated registration helpers exist for both services (the node adds them to one grpc server)."""
    assert callable(mls_api_pb2_grpc.add_MlsApiServicer_to_server)
    assert callable(identity_api_pb2_grpc.add_IdentityApiServicer_to_server)
    assert {name.removeprefix("/xmtp.mls.api.v1.MlsApi/") for name in MLS_API_METHODS} <= set(
        dir(mls_api_pb2_grpc.MlsApiServicer)
    )


def _field(message: Descriptor, name: str) -> FieldDescriptor:
    return message.fields_by_name[name]


@pytest.mark.parametrize(
    ("message", "field", "number", "kind"),
    [
        (mls_api_pb2.GroupMessage.V1.DESCRIPTOR, "is_commit", 7, FieldDescriptor.TYPE_BOOL),
        (mls_api_pb2.GroupMessage.V1.DESCRIPTOR, "group_id", 3, FieldDescriptor.TYPE_BYTES),
        (mls_api_pb2.GroupMessage.V1.DESCRIPTOR, "id", 1, FieldDescriptor.TYPE_UINT64),
        (mls_api_pb2.PagingInfo.DESCRIPTOR, "id_cursor", 3, FieldDescriptor.TYPE_UINT64),
        (mls_api_pb2.PagingInfo.DESCRIPTOR, "limit", 2, FieldDescriptor.TYPE_UINT32),
        (mls_api_pb2.WelcomeMessageInput.V1.DESCRIPTOR, "welcome_metadata", 7, FieldDescriptor.TYPE_BYTES),
        (mls_api_pb2.WelcomeMessage.DESCRIPTOR, "welcome_pointer", 2, FieldDescriptor.TYPE_MESSAGE),
        (mls_api_pb2.KeyPackageUpload.DESCRIPTOR, "key_package_tls_serialized", 1, FieldDescriptor.TYPE_BYTES),
        (mls_api_pb2.PublishCommitLogRequest.DESCRIPTOR, "signature", 3, FieldDescriptor.TYPE_MESSAGE),
        (
            identity_api_pb2.GetIdentityUpdatesResponse.IdentityUpdateLog.DESCRIPTOR,
            "server_timestamp_ns",
            2,
            FieldDescriptor.TYPE_UINT64,
        ),
        (identity_api_pb2.GetInboxIdsResponse.Response.DESCRIPTOR, "inbox_id", 2, FieldDescriptor.TYPE_STRING),
        (associations_pb2.IdentityUpdate.DESCRIPTOR, "inbox_id", 3, FieldDescriptor.TYPE_STRING),
        (associations_pb2.CreateInbox.DESCRIPTOR, "initial_identifier_kind", 4, FieldDescriptor.TYPE_ENUM),
        (associations_pb2.Signature.DESCRIPTOR, "installation_key", 3, FieldDescriptor.TYPE_MESSAGE),
        (associations_pb2.MemberIdentifier.DESCRIPTOR, "installation_public_key", 2, FieldDescriptor.TYPE_BYTES),
        (mls_contents_pb2.CommitLogEntry.DESCRIPTOR, "sequence_id", 1, FieldDescriptor.TYPE_UINT64),
        (content_pb2.ContentTypeId.DESCRIPTOR, "version_minor", 4, FieldDescriptor.TYPE_UINT32),
        (content_pb2.EncodedContent.DESCRIPTOR, "parameters", 2, FieldDescriptor.TYPE_MESSAGE),
        (content_pb2.EncodedContent.DESCRIPTOR, "fallback", 3, FieldDescriptor.TYPE_STRING),
        (content_pb2.EncodedContent.DESCRIPTOR, "content", 4, FieldDescriptor.TYPE_BYTES),
        (content_pb2.EncodedContent.DESCRIPTOR, "compression", 5, FieldDescriptor.TYPE_ENUM),
        (content_pb2.PlaintextEnvelope.DESCRIPTOR, "v2", 2, FieldDescriptor.TYPE_MESSAGE),
        (content_pb2.PlaintextEnvelope.V1.DESCRIPTOR, "idempotency_key", 2, FieldDescriptor.TYPE_STRING),
        (content_pb2.PlaintextEnvelope.V2.DESCRIPTOR, "idempotency_key", 1, FieldDescriptor.TYPE_STRING),
        (content_pb2.PlaintextEnvelope.V2.DESCRIPTOR, "content", 2, FieldDescriptor.TYPE_BYTES),
        (content_reaction_pb2.ReactionV2.DESCRIPTOR, "reference_inbox_id", 2, FieldDescriptor.TYPE_STRING),
        (content_reaction_pb2.ReactionV2.DESCRIPTOR, "schema", 5, FieldDescriptor.TYPE_ENUM),
        (group_membership_pb2.GroupMembership.DESCRIPTOR, "members", 1, FieldDescriptor.TYPE_MESSAGE),
        (group_membership_pb2.GroupMembership.DESCRIPTOR, "failed_installations", 2, FieldDescriptor.TYPE_BYTES),
        (group_metadata_pb2.GroupMetadataV1.DESCRIPTOR, "creator_inbox_id", 3, FieldDescriptor.TYPE_STRING),
        (group_metadata_pb2.GroupMetadataV1.DESCRIPTOR, "dm_members", 4, FieldDescriptor.TYPE_MESSAGE),
        (
            group_mutable_metadata_pb2.GroupMutableMetadataV1.DESCRIPTOR,
            "super_admin_list",
            3,
            FieldDescriptor.TYPE_MESSAGE,
        ),
        (group_permissions_pb2.PolicySet.DESCRIPTOR, "update_metadata_policy", 3, FieldDescriptor.TYPE_MESSAGE),
        (group_permissions_pb2.PolicySet.DESCRIPTOR, "update_permissions_policy", 6, FieldDescriptor.TYPE_MESSAGE),
        (group_permissions_pb2.MembershipPolicy.DESCRIPTOR, "any_condition", 3, FieldDescriptor.TYPE_MESSAGE),
        (transcript_messages_pb2.GroupUpdated.DESCRIPTOR, "left_inboxes", 5, FieldDescriptor.TYPE_MESSAGE),
        (
            transcript_messages_pb2.GroupUpdated.DESCRIPTOR,
            "removed_super_admin_inboxes",
            9,
            FieldDescriptor.TYPE_MESSAGE,
        ),
        (
            transcript_messages_pb2.GroupUpdated.MetadataFieldChange.DESCRIPTOR,
            "new_value",
            3,
            FieldDescriptor.TYPE_STRING,
        ),
    ],
)
def test_field_numbers_and_types_match_upstream(message: Descriptor, field: str, number: int, kind: int) -> None:
    found = _field(message, field)
    assert (found.number, found.type) == (number, kind)


def test_optional_fields_keep_their_presence() -> None:
    """``optional`` changes what a client can tell apart (an unknown inbox versus an empty id)."""
    assert _field(identity_api_pb2.GetInboxIdsResponse.Response.DESCRIPTOR, "inbox_id").has_presence
    assert _field(mls_api_pb2.GetNewestGroupMessageResponse.Response.DESCRIPTOR, "group_message").has_presence


def test_content_fields_keep_their_presence() -> None:
    """A missing fallback or compression differs from an empty one; libxmtp reads them as Option."""
    assert _field(content_pb2.EncodedContent.DESCRIPTOR, "fallback").has_presence
    assert _field(content_pb2.EncodedContent.DESCRIPTOR, "compression").has_presence
    assert _field(group_metadata_pb2.GroupMetadataV1.DESCRIPTOR, "dm_members").has_presence
    assert _field(transcript_messages_pb2.GroupUpdated.MetadataFieldChange.DESCRIPTOR, "old_value").has_presence


def test_content_enum_values_match_upstream() -> None:
    assert (content_pb2.COMPRESSION_DEFLATE, content_pb2.COMPRESSION_GZIP) == (0, 1)
    assert content_reaction_pb2.REACTION_ACTION_REMOVED == 2
    assert content_reaction_pb2.REACTION_SCHEMA_CUSTOM == 3
    assert group_metadata_pb2.CONVERSATION_TYPE_DM == 2
    assert group_metadata_pb2.CONVERSATION_TYPE_SYNC == 3
    assert group_permissions_pb2.MembershipPolicy.BASE_POLICY_ALLOW_IF_SUPER_ADMIN == 4
    assert group_permissions_pb2.MetadataPolicy.METADATA_BASE_POLICY_ALLOW_IF_ADMIN == 3
    # the permissions-update policy has no "allow": its numbers start at deny
    assert group_permissions_pb2.PermissionsUpdatePolicy.PERMISSIONS_BASE_POLICY_DENY == 1
    assert group_permissions_pb2.PermissionsUpdatePolicy.PERMISSIONS_BASE_POLICY_ALLOW_IF_SUPER_ADMIN == 3


def test_content_packages_are_upstreams() -> None:
    """Type names never travel, but upstream's packages keep our descriptors comparable with libxmtp's."""
    assert content_pb2.EncodedContent.DESCRIPTOR.full_name == "xmtp.mls.message_contents.EncodedContent"
    assert content_reaction_pb2.ReactionV2.DESCRIPTOR.full_name == "xmtp.mls.message_contents.content_types.ReactionV2"
    assert group_permissions_pb2.PolicySet.DESCRIPTOR.full_name == "xmtp.mls.message_contents.PolicySet"


def test_enum_values_match_upstream() -> None:
    assert mls_api_pb2.SORT_DIRECTION_ASCENDING == 1
    assert mls_api_pb2.SORT_DIRECTION_DESCENDING == 2
    assert associations_pb2.IDENTIFIER_KIND_ETHEREUM == 1
    assert mls_contents_pb2.WELCOME_WRAPPER_ALGORITHM_CURVE25519 == 1
    assert mls_contents_pb2.WELCOME_WRAPPER_ALGORITHM_XWING_MLKEM_768_DRAFT_6 == 2
    assert mls_contents_pb2.WELCOME_POINTER_WRAPPER_ALGORITHM_XWING_MLKEM_768_DRAFT_6 == 2


def test_a_group_message_round_trips_through_its_wire_bytes() -> None:
    """Hand-assembled bytes (field 1 = V1, inside it field 7 = is_commit) decode as the client would send them."""
    v1 = bytes([0x08, 0x05, 0x1A, 0x02, 0xAB, 0xCD, 0x38, 0x01])  # id=5, group_id=abcd, is_commit=true
    wire = bytes([0x0A, len(v1)]) + v1
    decoded = mls_api_pb2.GroupMessage.FromString(wire)
    assert (decoded.v1.id, decoded.v1.group_id, decoded.v1.is_commit) == (5, b"\xab\xcd", True)
    assert decoded.SerializeToString() == wire
