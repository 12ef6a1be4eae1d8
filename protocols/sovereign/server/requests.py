"""Each request type: the fields it reads, the store call it makes (on which thread), the reply it gives.

A request is always made *as* the connection's proven installation: no
request has a field naming who acts, so a client cannot act for another
installation.  Whether it may read a group, and whose deliveries an ack
touches, the store decides from that installation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from protocols.libraries.delivery import frames
from protocols.libraries.delivery.records import HistoryPage, Identity, IdentityPublished, Membership, Stored
from protocols.sovereign.service import Store


@attrs.frozen
class Operation:
    """A request made ready for the store.

    Attributes:
        writes: run on the writer thread (else on a reader).
        run: the store call, made on that thread.
        reply: the reply frame's fields (besides ``type`` and ``id``) from the call's result.
        stored: for ``send``: the result goes to the recipients too (see :meth:`Hub.deliver`).
    """

    writes: bool
    run: Callable[[Store], Any]
    reply: Callable[[Any], dict[str, Any]]
    stored: bool = False


#: Parses one request's fields for ``installation``; raises :class:`frames.RequestError`.
Parser = Callable[[Mapping[str, Any], str], Operation]


def _send(frame: Mapping[str, Any], installation: str) -> Operation:
    group_id = frames.text(frame, "group_id")
    payload = frames.base64_field(frame, "payload")
    recipient = frames.optional_text(frame, "recipient")

    def reply(stored: Stored) -> dict[str, Any]:
        message = stored.message
        return {
            "message_id": message.id,
            "server_timestamp": message.server_timestamp,
            "message_type": message.message_type,
            "epoch": message.epoch,
            "superseded": stored.superseded,
            "sequence": message.sequence,
            "duplicate": stored.duplicate,
        }

    return Operation(
        True, lambda store: store.send(installation, group_id, payload, recipient=recipient), reply, stored=True
    )


def page_reply(page: HistoryPage) -> dict[str, Any]:
    return {
        "messages": [message.to_json() for message in page.messages],
        "next_cursor": page.next_cursor,
        "has_more": page.has_more,
    }


def _history(frame: Mapping[str, Any], installation: str) -> Operation:
    group_id = frames.text(frame, "group_id")
    cursor = frames.optional_text(frame, "cursor")
    limit = frames.integer(frame, "limit", 50)
    direction = frames.optional_text(frame, "direction") or frames.Direction.BACKWARD
    return Operation(
        False,
        lambda store: store.history(installation, group_id, cursor=cursor, limit=limit, direction=direction),
        page_reply,
    )


def _welcomes(frame: Mapping[str, Any], installation: str) -> Operation:
    cursor = frames.optional_text(frame, "cursor")
    limit = frames.integer(frame, "limit", 50)
    return Operation(False, lambda store: store.welcomes(installation, cursor=cursor, limit=limit), page_reply)


def _ack(frame: Mapping[str, Any], installation: str) -> Operation:
    ids = frames.text_list(frame, "ids")
    return Operation(True, lambda store: store.ack(installation, ids), lambda changed: {"changed": changed})


def _read(frame: Mapping[str, Any], installation: str) -> Operation:
    ids = frames.text_list(frame, "ids")
    return Operation(True, lambda store: store.read(installation, ids), lambda changed: {"changed": changed})


def _membership_reply(membership: Membership) -> dict[str, Any]:
    return {"group_id": membership.group_id, "member": membership.member, "changed": membership.changed}


def _join(frame: Mapping[str, Any], installation: str) -> Operation:
    group_id = frames.text(frame, "group_id")
    return Operation(True, lambda store: store.join(installation, group_id), _membership_reply)


def _leave(frame: Mapping[str, Any], installation: str) -> Operation:
    group_id = frames.text(frame, "group_id")
    return Operation(True, lambda store: store.leave(installation, group_id), _membership_reply)


def _key_package_publish(frame: Mapping[str, Any], installation: str) -> Operation:
    key_packages = frames.base64_list(frame, "key_packages")
    return Operation(
        True, lambda store: store.key_package_publish(installation, key_packages), lambda stock: {"stock": stock}
    )


def _key_package_fetch(frame: Mapping[str, Any], installation: str) -> Operation:
    # Fetching someone else's KeyPackage is the point (to invite them); it is consumed, so each is used once.
    owner = frames.text(frame, "installation")
    return Operation(
        True,
        lambda store: store.key_package_fetch(owner),
        lambda data: {"installation": owner, "key_package": frames.b64(data)},
    )


def _identity_publish(frame: Mapping[str, Any], installation: str) -> Operation:
    # The binding is always the connection's own installation: a request has no field to name another.
    address = frames.text(frame, "address")
    binding = frames.base64_field(frame, "binding")

    def reply(published: IdentityPublished) -> dict[str, Any]:
        return {"address": published.address, "installation": published.installation, "changed": published.changed}

    return Operation(True, lambda store: store.identity_publish(installation, address, binding), reply)


def _identity_fetch(frame: Mapping[str, Any], installation: str) -> Operation:
    address = frames.text(frame, "address")

    def reply(identity: Identity) -> dict[str, Any]:
        return {"address": identity.address, "installations": [each.to_json() for each in identity.installations]}

    return Operation(False, lambda store: store.identity_fetch(address), reply)


PARSERS: Mapping[str, Parser] = {
    "send": _send,
    "history": _history,
    "ack": _ack,
    "read": _read,
    "join": _join,
    "leave": _leave,
    "key_package_publish": _key_package_publish,
    "key_package_fetch": _key_package_fetch,
    "identity_publish": _identity_publish,
    "identity_fetch": _identity_fetch,
    "welcomes": _welcomes,
}
assert set(PARSERS) == set(frames.REPLY_TYPES)
