"""Drive one real libxmtp client (``xmtp-bindings``) from JSON lines: run inside the peer's own virtualenv.

This file is executed by the peer venv's interpreter as a script, never
imported by the suite, so it imports nothing from the project.  Requests come
on stdin, one JSON object a line: ``{"id": 1, "op": "create", ...}``; each gets
one reply line ``{"id": 1, "ok": true, "result": ...}`` or ``{"id": 1, "ok":
false, "error": "...", "kind": "<exception class>"}``.  Requests run one at a
time, in order.  Streams write ``{"event": "message", "stream": N, "message":
{...}}`` lines as libxmtp delivers them, interleaved with replies.

Identifiers travel as hex (group ids, message ids, installation ids); inbox ids
and addresses are libxmtp's strings.  The Ethereum account key is generated here
(or given, for a second installation of the same account) and signs the
identity's signature request with EIP-191 personal_sign, as a wallet would.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import threading
import traceback
from typing import Any

import xmtp_bindings.xmtpv3 as xmtp

# Protocol lines go to the original stdout; anything native code prints lands on stderr instead.
_PROTOCOL = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
_WRITE_LOCK = threading.Lock()


def emit(line: dict[str, Any]) -> None:
    text = json.dumps(line)
    with _WRITE_LOCK:
        _PROTOCOL.write(text + "\n")
        _PROTOCOL.flush()


def options(record_type: type, **given: Any) -> Any:
    """A UniFFI record with every field not given left unset (None, or False for plain flags)."""
    fields = inspect.signature(record_type.__init__).parameters
    values = {name: None for name in fields if name != "self"}
    if "include_duplicate_dms" in values:
        values["include_duplicate_dms"] = False
    values.update(given)
    return record_type(**values)


def message_view(message: Any) -> dict[str, Any]:
    try:
        text: str | None = xmtp.decode_text(message.content)
    except Exception:  # a membership change or another content type carries no text
        text = None
    return {
        "id": message.id.hex(),
        "group_id": message.conversation_id.hex(),
        "sender_inbox_id": message.sender_inbox_id,
        "kind": message.kind.name.lower(),
        "delivery_status": message.delivery_status.name.lower(),
        "sent_at_ns": message.sent_at_ns,
        "text": text,
    }


def decoded_view(message: Any) -> dict[str, Any]:
    """A message as libxmtp decodes it (an ``FfiDecodedMessage``, read through its accessors): id, sender, content
    type (``authority/type:major.minor``) and, for a reaction or a reply, the message it answers and what it says."""
    kind = message.content_type_id()
    view: dict[str, Any] = {
        "id": message.id().hex(),
        "sender_inbox_id": message.sender_inbox_id(),
        "content_type": f"{kind.authority_id}/{kind.type_id}:{kind.version_major}.{kind.version_minor}",
    }
    content = message.content()
    if content.is_REACTION():
        reaction = content[0]
        view |= {
            "reference": reaction.reference,
            "reference_inbox_id": reaction.reference_inbox_id,
            "action": reaction.action.name.lower(),
            "content": reaction.content,
        }
    elif content.is_REPLY():
        reply = content[0]
        body = reply.content
        view |= {
            "reference": reply.reference_id,
            "text": body[0].content if body is not None and body.is_TEXT() else None,
        }
    elif content.is_TEXT():
        view["text"] = content[0].content
    reactions = message.reactions()
    if reactions:
        view["reactions"] = [decoded_view(reaction) for reaction in reactions]
    return view


def _or_none(accessor: Any) -> Any:
    try:
        return accessor()
    except Exception:  # libxmtp reports a missing attribute as an error
        return None


class StreamForwarder(xmtp.FfiMessageCallback):
    """Writes each streamed message as an event line, tagged with its stream's number."""

    def __init__(self, number: int):
        self.number = number

    def on_message(self, message: Any) -> None:
        emit({"event": "message", "stream": self.number, "message": message_view(message)})

    def on_error(self, error: Any) -> None:
        emit({"event": "error", "stream": self.number, "error": str(error)})

    def on_close(self) -> None:
        emit({"event": "closed", "stream": self.number})


class Driver:
    """One client and its streams; each ``op_*`` method answers the request of that name."""

    def __init__(self) -> None:
        self.client: Any = None
        self.key = b""  # the Ethereum account key that registered the inbox: it signs later identity changes
        self.streams: dict[int, Any] = {}

    # ---- the client ----

    async def op_create(self, url: str, db_path: str, private_key: str | None = None) -> dict[str, Any]:
        """Register (or reopen) the inbox of an Ethereum account as a new installation; device sync off."""
        key = bytes.fromhex(private_key) if private_key else os.urandom(32)
        self.key = key
        address = xmtp.ethereum_address_from_pubkey(xmtp.ethereum_generate_public_key(bytes(key))).lower()
        identity = xmtp.FfiIdentifier(identifier=address, identifier_kind=xmtp.FfiIdentifierKind.ETHEREUM)
        api = await xmtp.connect_to_backend(url, None, False, None, None, None, None)
        inbox_id = await xmtp.get_inbox_id_for_identifier(api, identity) or xmtp.generate_inbox_id(identity, 0)
        database = options(xmtp.DbOptions, db=db_path)
        self.client = await xmtp.create_client(
            api, api, database, inbox_id, identity, 0, None, xmtp.FfiDeviceSyncMode.DISABLED, None, None
        )
        request = self.client.signature_request()
        if request is not None:
            text = await request.signature_text()
            # EIP-191 personal_sign: the bindings hash with the Ethereum message prefix when told to
            await request.add_ecdsa_signature(xmtp.ethereum_sign_recoverable(text.encode(), bytes(key), True))
            await self.client.register_identity(request)
        return {
            "inbox_id": self.client.inbox_id(),
            "installation_id": self.client.installation_id().hex(),
            "address": address,
            "private_key": key.hex(),
        }

    async def op_inbox_id_for(self, address: str) -> str | None:
        identity = xmtp.FfiIdentifier(identifier=address.lower(), identifier_kind=xmtp.FfiIdentifierKind.ETHEREUM)
        return await self.client.find_inbox_id(identity)

    async def op_generate_inbox_id(self, address: str, nonce: int) -> str:
        """The inbox id libxmtp derives for an Ethereum address and nonce (no client or network needed)."""
        identity = xmtp.FfiIdentifier(identifier=address.lower(), identifier_kind=xmtp.FfiIdentifierKind.ETHEREUM)
        return xmtp.generate_inbox_id(identity, nonce)

    async def _sign_and_apply(self, request: Any, key: bytes) -> None:
        """Sign an identity change's text with the Ethereum ``key`` (EIP-191) and publish it."""
        text = await request.signature_text()
        await request.add_ecdsa_signature(xmtp.ethereum_sign_recoverable(text.encode(), key, True))
        await self.client.apply_signature_request(request)

    async def op_link_address(self, private_key: str) -> str:
        """Link another Ethereum account to this inbox (this installation and the new account sign); its address."""
        key = bytes.fromhex(private_key)
        address = xmtp.ethereum_address_from_pubkey(xmtp.ethereum_generate_public_key(key)).lower()
        identity = xmtp.FfiIdentifier(identifier=address, identifier_kind=xmtp.FfiIdentifierKind.ETHEREUM)
        await self._sign_and_apply(await self.client.add_identity(identity), key)
        return address

    async def op_revoke_installations(self, installation_ids: list[str]) -> None:
        """Revoke installations of this inbox, signed by the recovery account."""
        request = await self.client.revoke_installations([bytes.fromhex(one) for one in installation_ids])
        await self._sign_and_apply(request, self.key)

    async def op_change_recovery(self, address: str) -> None:
        """Make ``address`` the inbox's recovery identifier, signed by the current recovery account."""
        identity = xmtp.FfiIdentifier(identifier=address.lower(), identifier_kind=xmtp.FfiIdentifierKind.ETHEREUM)
        await self._sign_and_apply(await self.client.change_recovery_identifier(identity), self.key)

    async def op_installations(self, inbox_id: str) -> list[str]:
        """The installation ids the network says ``inbox_id`` has."""
        state = await self.client.get_latest_inbox_state(inbox_id)
        return [installation.id.hex() for installation in state.installations]

    # ---- conversations ----

    def _conversation(self, group_id: str) -> Any:
        return self.client.conversation(bytes.fromhex(group_id))

    async def op_create_group(
        self,
        members: list[str],
        name: str | None = None,
        description: str | None = None,
        permissions: str | None = None,
    ) -> str:
        """Create a group; ``permissions`` names a preset of FfiGroupPermissionsOptions (``default``, ``admin_only``)."""
        preset = getattr(xmtp.FfiGroupPermissionsOptions, permissions.upper()) if permissions else None
        group = await self.client.conversations().create_group(
            members,
            options(xmtp.FfiCreateGroupOptions, group_name=name, group_description=description, permissions=preset),
        )
        return group.id().hex()

    async def op_create_dm(self, inbox_id: str) -> str:
        dm = await self.client.conversations().find_or_create_dm(inbox_id, options(xmtp.FfiCreateDmOptions))
        return dm.id().hex()

    async def op_add_members(self, group_id: str, inbox_ids: list[str]) -> None:
        await self._conversation(group_id).add_members(inbox_ids)

    async def op_remove_members(self, group_id: str, inbox_ids: list[str]) -> None:
        await self._conversation(group_id).remove_members(inbox_ids)

    async def op_leave_group(self, group_id: str) -> None:
        """Ask to leave (libxmtp sends a leave request; a super admin's worker then removes this inbox)."""
        await self._conversation(group_id).leave_group()

    async def op_set_group_name(self, group_id: str, name: str) -> None:
        await self._conversation(group_id).update_group_name(name)

    async def op_group_name(self, group_id: str) -> str:
        return self._conversation(group_id).group_name()

    async def op_update_metadata(self, group_id: str, field: str, value: str) -> None:
        """Change ``description``, ``group_image_url_square`` or ``app_data`` (the name has ``set_group_name``)."""
        conversation = self._conversation(group_id)
        updates = {
            "description": conversation.update_group_description,
            "group_image_url_square": conversation.update_group_image_url_square,
            "app_data": conversation.update_app_data,
        }
        await updates[field](value)

    async def op_change_admins(self, group_id: str, change: str, inbox_id: str) -> None:
        """``change`` is one of add_admin, remove_admin, add_super_admin, remove_super_admin."""
        assert change in ("add_admin", "remove_admin", "add_super_admin", "remove_super_admin"), change
        await getattr(self._conversation(group_id), change)(inbox_id)

    async def op_set_permission(self, group_id: str, update: str, policy: str, field: str | None = None) -> None:
        """One policy changed: ``update`` and ``policy`` name FfiPermissionUpdateType and FfiPermissionPolicy members."""
        await self._conversation(group_id).update_permission_policy(
            getattr(xmtp.FfiPermissionUpdateType, update.upper()),
            getattr(xmtp.FfiPermissionPolicy, policy.upper()),
            getattr(xmtp.FfiMetadataField, field.upper()) if field else None,
        )

    async def op_group_state(self, group_id: str) -> dict[str, Any]:
        """Metadata, admin lists and permission policies as this client's libxmtp reports them (None where it
        reports an error, as for a DM's app data, which DMs do not carry)."""
        conversation = self._conversation(group_id)
        metadata = await conversation.group_metadata()
        permissions = conversation.group_permissions()
        policy_set = permissions.policy_set()
        return {
            "name": _or_none(conversation.group_name),
            "description": _or_none(conversation.group_description),
            "image_url": _or_none(conversation.group_image_url_square),
            "app_data": _or_none(conversation.app_data),
            "admins": sorted(conversation.admin_list()),
            "super_admins": sorted(conversation.super_admin_list()),
            "creator_inbox_id": metadata.creator_inbox_id(),
            "conversation_type": metadata.conversation_type().name.lower(),
            "preset": permissions.policy_type().name.lower(),
            "policies": {name: getattr(policy_set, name).name.lower() for name in vars(policy_set)},
        }

    async def op_epoch(self, group_id: str) -> int:
        """The MLS epoch this client's copy of the group is at (libxmtp's debug info)."""
        return int((await self._conversation(group_id).conversation_debug_info()).epoch)

    async def op_members(self, group_id: str) -> list[str]:
        return sorted(member.inbox_id for member in await self._conversation(group_id).list_members())

    async def op_is_active(self, group_id: str) -> bool:
        return self._conversation(group_id).is_active()

    async def op_list_groups(self) -> list[str]:
        listed = self.client.conversations().list_groups(options(xmtp.FfiListConversationsOptions))
        return [item.conversation().id().hex() for item in listed]

    async def op_list_dms(self) -> list[dict[str, str]]:
        listed = self.client.conversations().list_dms(options(xmtp.FfiListConversationsOptions))
        return [
            {"group_id": item.conversation().id().hex(), "peer_inbox_id": item.conversation().dm_peer_inbox_id()}
            for item in listed
        ]

    # ---- messages ----

    async def op_send_text(self, group_id: str, text: str) -> str:
        return (await self._conversation(group_id).send_text(text)).hex()

    async def op_send_encoded(self, group_id: str, content: str) -> str:
        """Send EncodedContent bytes (hex) as they are; the message id."""
        sent = await self._conversation(group_id).send(
            bytes.fromhex(content), options(xmtp.FfiSendMessageOpts, should_push=True)
        )
        return sent.hex()

    async def op_send_encoded_keyed(self, group_id: str, content: str) -> dict[str, Any]:
        """Send EncodedContent bytes (hex) in two steps, reading the stored send time (the idempotency key)
        between them, since publishing replaces it with the node's timestamp; the id and that key."""
        conversation = self._conversation(group_id)
        message_id = conversation.send_optimistic(
            bytes.fromhex(content), options(xmtp.FfiSendMessageOpts, should_push=True)
        )
        found = await conversation.find_messages(options(xmtp.FfiListMessagesOptions))
        (stored,) = [message for message in found if message.id == message_id]
        await conversation.publish_messages()
        return {"id": message_id.hex(), "idempotency_key": str(stored.sent_at_ns)}

    async def op_message_contents(self, group_id: str) -> list[dict[str, Any]]:
        """Every stored message with the EncodedContent bytes libxmtp keeps for it (hex)."""
        found = await self._conversation(group_id).find_messages(options(xmtp.FfiListMessagesOptions))
        return [
            {"id": message.id.hex(), "sender_inbox_id": message.sender_inbox_id, "content": message.content.hex()}
            for message in found
        ]

    async def op_decoded_messages(self, group_id: str) -> list[dict[str, Any]]:
        """libxmtp's own decoding of each stored message (``find_enriched_messages``): its content type, and for a
        reaction or reply what it answers."""
        found = self._conversation(group_id).find_enriched_messages(options(xmtp.FfiListMessagesOptions))
        return [decoded_view(message) for message in found]

    async def op_encode_content(self, kind: str, value: dict[str, Any]) -> str:
        """EncodedContent bytes (hex) made by libxmtp's own codec: ``kind`` is text, reaction or reply."""
        if kind == "text":
            return xmtp.encode_text(value["text"]).hex()
        if kind == "reaction":
            payload = xmtp.FfiReactionPayload(
                reference=value["reference"],
                reference_inbox_id=value["reference_inbox_id"],
                action=getattr(xmtp.FfiReactionAction, value["action"].upper()),
                content=value["content"],
                schema=getattr(xmtp.FfiReactionSchema, value["schema"].upper()),
            )
            return xmtp.encode_reaction(payload).hex()
        inner = xmtp.FfiEncodedContent(
            type_id=xmtp.FfiContentTypeId(authority_id="xmtp.org", type_id="text", version_major=1, version_minor=0),
            parameters={"encoding": "UTF-8"},
            fallback=None,
            compression=None,
            content=value["text"].encode(),
        )
        reply = xmtp.FfiReply(
            reference=value["reference"], reference_inbox_id=value.get("reference_inbox_id"), content=inner
        )
        return xmtp.encode_reply(reply).hex()

    async def op_decode_content(self, kind: str, content: str) -> dict[str, Any]:
        """What libxmtp's own codec reads from EncodedContent bytes (hex): text, reaction, reply, remote_attachment
        or group_updated."""
        data = bytes.fromhex(content)
        if kind == "text":
            return {"text": xmtp.decode_text(data)}
        if kind == "reaction":
            reaction = xmtp.decode_reaction(data)
            return {
                "reference": reaction.reference,
                "reference_inbox_id": reaction.reference_inbox_id,
                "action": reaction.action.name.lower(),
                "content": reaction.content,
                "schema": reaction.schema.name.lower(),
            }
        if kind == "reply":
            reply = xmtp.decode_reply(data)
            return {
                "reference": reply.reference,
                "reference_inbox_id": reply.reference_inbox_id,
                "inner_type": reply.content.type_id.type_id if reply.content.type_id else None,
                "inner_content": reply.content.content.hex(),  # the nested content's own bytes
            }
        if kind == "remote_attachment":
            attachment = xmtp.decode_remote_attachment(data)
            return {
                "url": attachment.url,
                "content_digest": attachment.content_digest,
                "secret": attachment.secret.hex(),
                "salt": attachment.salt.hex(),
                "nonce": attachment.nonce.hex(),
                "scheme": attachment.scheme,
                "content_length": attachment.content_length,
                "filename": attachment.filename,
            }
        updated = xmtp.decode_group_updated(data)
        return {
            "initiated_by_inbox_id": updated.initiated_by_inbox_id,
            "added_inboxes": [inbox.inbox_id for inbox in updated.added_inboxes],
            "removed_inboxes": [inbox.inbox_id for inbox in updated.removed_inboxes],
            "added_admin_inboxes": [inbox.inbox_id for inbox in updated.added_admin_inboxes],
            "metadata_field_changes": [
                [change.field_name, change.old_value, change.new_value] for change in updated.metadata_field_changes
            ],
        }

    async def op_sync_welcomes(self) -> None:
        await self.client.conversations().sync()

    async def op_sync_all(self) -> int:
        summary = await self.client.conversations().sync_all_conversations(None)
        return summary.num_synced

    async def op_sync_group(self, group_id: str) -> None:
        await self._conversation(group_id).sync()

    async def op_message_count(self, group_id: str) -> int:
        """How many messages ``find_messages`` lists (what a benchmark times, without carrying them over JSON)."""
        return len(await self._conversation(group_id).find_messages(options(xmtp.FfiListMessagesOptions)))

    async def op_messages(self, group_id: str) -> list[dict[str, Any]]:
        found = await self._conversation(group_id).find_messages(options(xmtp.FfiListMessagesOptions))
        return [message_view(message) for message in found]

    # ---- streams ----

    async def op_stream_all(self) -> int:
        """Stream every message of every conversation (welcomes included); the stream's number."""
        number = len(self.streams) + 1
        closer = await self.client.conversations().stream_all_messages(StreamForwarder(number), None)
        await closer.wait_for_ready()
        self.streams[number] = closer
        return number

    async def op_stream_group(self, group_id: str) -> int:
        number = len(self.streams) + 1
        closer = await self._conversation(group_id).stream(StreamForwarder(number))
        await closer.wait_for_ready()
        self.streams[number] = closer
        return number

    async def op_end_stream(self, stream: int) -> None:
        await self.streams.pop(stream).end_and_wait()

    async def op_close(self) -> None:
        for closer in self.streams.values():
            closer.end()
        self.streams.clear()
        if self.client is not None:
            self.client.release_db_connection()


async def serve() -> None:
    driver = Driver()
    loop = asyncio.get_running_loop()
    xmtp.uniffi_set_event_loop(loop)
    emit({"event": "ready", "libxmtp": xmtp.get_version_info()})
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        request = json.loads(line)
        number, op = request.pop("id"), request.pop("op")
        handler = getattr(driver, f"op_{op}", None)
        if handler is None:
            emit({"id": number, "ok": False, "error": f"unknown op {op!r}", "kind": "UnknownOp"})
            continue
        try:
            result = await handler(**request)
        except Exception as error:
            traceback.print_exc(file=sys.stderr)
            emit({"id": number, "ok": False, "error": str(error), "kind": type(error).__name__})
        else:
            emit({"id": number, "ok": True, "result": result})
        if op == "close":
            break


if __name__ == "__main__":
    asyncio.run(serve())
