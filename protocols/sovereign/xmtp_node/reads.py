"""The XMTP node's queries: each one read transaction on a store reader thread, answered as protobuf.

Every function takes the thread's :class:`~protocols.sovereign.service.Store` (its own connection) and
returns the response message, so the event loop only hands it to gRPC.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocols.libraries.xmtp_wire.proto import (
    associations_pb2,
    identity_api_pb2,
    mls_api_pb2,
    mls_contents_pb2,
)
from protocols.sovereign.service import Store
from protocols.sovereign.xmtp_node.commands import WELCOME
from protocols.sovereign.xmtp_node.paging import Page, rows

_GROUP_MESSAGE = (
    "SELECT id, created_ns, group_id, data, sender_hmac, should_push, is_commit FROM sovereign_xmtp_group_messages"
)
_WELCOME = (
    "SELECT id, created_ns, installation_key, kind, data, hpke_public_key, wrapper_algorithm, welcome_metadata "
    "FROM sovereign_xmtp_welcomes"
)
_COMMIT_LOG = "SELECT id, entry, signature FROM sovereign_xmtp_commit_log"


def group_message(row: Sequence[Any], *, with_content: bool = True) -> mls_api_pb2.GroupMessage:
    message_id, created_ns, group_id, data, sender_hmac, should_push, is_commit = row
    return mls_api_pb2.GroupMessage(
        v1=mls_api_pb2.GroupMessage.V1(
            id=message_id,
            created_ns=created_ns,
            group_id=bytes(group_id),
            data=bytes(data) if with_content else b"",
            sender_hmac=bytes(sender_hmac),
            should_push=bool(should_push),
            is_commit=bool(is_commit),
        )
    )


def welcome_message(row: Sequence[Any]) -> mls_api_pb2.WelcomeMessage:
    welcome_id, created_ns, installation_key, kind, data, hpke_public_key, wrapper_algorithm, metadata = row
    if kind == WELCOME:
        return mls_api_pb2.WelcomeMessage(
            v1=mls_api_pb2.WelcomeMessage.V1(
                id=welcome_id,
                created_ns=created_ns,
                installation_key=bytes(installation_key),
                data=bytes(data),
                hpke_public_key=bytes(hpke_public_key),
                wrapper_algorithm=wrapper_algorithm,
                welcome_metadata=bytes(metadata),
            )
        )
    return mls_api_pb2.WelcomeMessage(
        welcome_pointer=mls_api_pb2.WelcomeMessage.WelcomePointer(
            id=welcome_id,
            created_ns=created_ns,
            installation_key=bytes(installation_key),
            welcome_pointer=bytes(data),
            hpke_public_key=bytes(hpke_public_key),
            wrapper_algorithm=wrapper_algorithm,
        )
    )


def welcome_id(message: mls_api_pb2.WelcomeMessage) -> int:
    return message.v1.id if message.WhichOneof("version") == "v1" else message.welcome_pointer.id


# --- group messages and welcomes ------------------------------------------------------------------------


def query_group_messages(store: Store, group_id: bytes, paging: mls_api_pb2.PagingInfo) -> Any:
    page = Page.of(paging)
    with store.app.db.read():
        found = rows(store.app.db, _GROUP_MESSAGE, "group_id = ?", (group_id,), page)
    return mls_api_pb2.QueryGroupMessagesResponse(
        messages=[group_message(row) for row in found], paging_info=page.answer([row[0] for row in found])
    )


def query_welcomes(store: Store, installation_key: bytes, paging: mls_api_pb2.PagingInfo) -> Any:
    page = Page.of(paging)
    with store.app.db.read():
        found = rows(store.app.db, _WELCOME, "installation_key = ?", (installation_key,), page)
    return mls_api_pb2.QueryWelcomeMessagesResponse(
        messages=[welcome_message(row) for row in found], paging_info=page.answer([row[0] for row in found])
    )


#: A stream's replay reads this many messages per read transaction.
REPLAY_PAGE = 500


def group_messages_after(store: Store, *, key: bytes, cursor: int) -> list[mls_api_pb2.GroupMessage]:
    """Up to :data:`REPLAY_PAGE` of group ``key``'s messages after id ``cursor``, oldest first (a stream's replay)."""
    with store.app.db.read():
        found = rows(store.app.db, _GROUP_MESSAGE, "group_id = ?", (key,), Page(cursor, False, REPLAY_PAGE))
    return [group_message(row) for row in found]


def welcomes_after(store: Store, *, key: bytes, cursor: int) -> list[mls_api_pb2.WelcomeMessage]:
    """Up to :data:`REPLAY_PAGE` of the welcomes to installation ``key`` after id ``cursor``, oldest first."""
    with store.app.db.read():
        found = rows(store.app.db, _WELCOME, "installation_key = ?", (key,), Page(cursor, False, REPLAY_PAGE))
    return [welcome_message(row) for row in found]


def newest_group_messages(store: Store, request: mls_api_pb2.GetNewestGroupMessageRequest) -> Any:
    answer = mls_api_pb2.GetNewestGroupMessageResponse.Response
    responses = []
    with store.app.db.read():
        for group_id in request.group_ids:
            row = store.app.db.one(f"{_GROUP_MESSAGE} WHERE group_id = ? ORDER BY id DESC LIMIT 1", (group_id,))
            found = None if row is None else group_message(row, with_content=request.include_content)
            responses.append(answer(group_message=found) if found is not None else answer())
    return mls_api_pb2.GetNewestGroupMessageResponse(responses=responses)


# --- key packages and commit logs ---------------------------------------------------------------------------


def fetch_key_packages(store: Store, installation_keys: Sequence[bytes]) -> Any:
    """Each installation's latest KeyPackage, in the order asked; an unknown installation gets an empty entry
    in its place (as the upstream node answers)."""
    entry = mls_api_pb2.FetchKeyPackagesResponse.KeyPackage
    with store.app.db.read():
        found = [
            store.app.db.value(
                "SELECT key_package FROM sovereign_xmtp_key_packages WHERE installation_key = ?", (bytes(key),)
            )
            for key in installation_keys
        ]
    return mls_api_pb2.FetchKeyPackagesResponse(
        key_packages=[entry(key_package_tls_serialized=bytes(data) if data else b"") for data in found]
    )


def query_commit_logs(store: Store, request: mls_api_pb2.BatchQueryCommitLogRequest) -> Any:
    responses = []
    with store.app.db.read():
        for query in request.requests:
            page = Page.of(query.paging_info)
            found = rows(store.app.db, _COMMIT_LOG, "group_id = ?", (query.group_id,), page)
            entries = [
                mls_contents_pb2.CommitLogEntry(
                    sequence_id=entry_id,
                    serialized_commit_log_entry=bytes(entry),
                    signature=associations_pb2.RecoverableEd25519Signature.FromString(bytes(signature)),
                )
                for entry_id, entry, signature in found
            ]
            responses.append(
                mls_api_pb2.QueryCommitLogResponse(
                    group_id=query.group_id,
                    commit_log_entries=entries,
                    paging_info=page.answer([row[0] for row in found]),
                )
            )
    return mls_api_pb2.BatchQueryCommitLogResponse(responses=responses)


# --- identity ---------------------------------------------------------------------------------------------------


def identity_updates(store: Store, request: identity_api_pb2.GetIdentityUpdatesRequest) -> Any:
    """Each inbox's updates after the sequence id asked, in order."""
    log = identity_api_pb2.GetIdentityUpdatesResponse.IdentityUpdateLog
    answer = identity_api_pb2.GetIdentityUpdatesResponse.Response
    responses = []
    with store.app.db.read():
        for wanted in request.requests:
            found = store.app.db.all(
                "SELECT sequence_id, server_timestamp_ns, identity_update FROM sovereign_xmtp_identity_updates "
                "WHERE inbox_id = ? AND sequence_id > ? ORDER BY sequence_id",
                (wanted.inbox_id, wanted.sequence_id),
            )
            updates = [
                log(
                    sequence_id=sequence_id,
                    server_timestamp_ns=stamp,
                    update=associations_pb2.IdentityUpdate.FromString(bytes(update)),
                )
                for sequence_id, stamp, update in found
            ]
            responses.append(answer(inbox_id=wanted.inbox_id, updates=updates))
    return identity_api_pb2.GetIdentityUpdatesResponse(responses=responses)


def inbox_ids(store: Store, request: identity_api_pb2.GetInboxIdsRequest) -> Any:
    """The inbox holding each identifier asked for, the latest to claim it if several do (none: ``inbox_id``
    left unset)."""
    answer = identity_api_pb2.GetInboxIdsResponse.Response
    responses = []
    with store.app.db.read():
        for wanted in request.requests:
            inbox_id = store.app.db.value(
                "SELECT inbox_id FROM sovereign_xmtp_inbox_index WHERE identifier = ? AND kind = ? "
                "ORDER BY claimed_ns DESC LIMIT 1",
                (wanted.identifier, _kind(wanted.identifier_kind)),
            )
            found = answer(identifier=wanted.identifier, identifier_kind=wanted.identifier_kind)
            if inbox_id is not None:
                found.inbox_id = inbox_id
            responses.append(found)
    return identity_api_pb2.GetInboxIdsResponse(responses=responses)


def _kind(identifier_kind: int) -> int:
    """Older clients leave the kind unspecified and mean an Ethereum address."""
    return identifier_kind or associations_pb2.IDENTIFIER_KIND_ETHEREUM
