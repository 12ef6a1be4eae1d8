"""Every refusal of the XMTP node, in one place: what is checked before anything is stored, and how a
refusal becomes a gRPC status with a reason.

The checks themselves are the ``xmtp_identity`` library's (key packages, identity updates, MLS framing of
group messages, welcomes); this module calls them on a request's every item before its command runs, so a
request is stored whole or not at all.  Identity updates need their inbox's state, so they are checked
inside their command (:func:`.commands.command_publish_identity_update`), which raises the same
:class:`~protocols.libraries.xmtp_identity.Refused` and undoes its transaction.  The store's limits
(:mod:`protocols.sovereign.errors`) are refused as ``RESOURCE_EXHAUSTED``.
"""

from __future__ import annotations

import time

import grpc

from core.errors import TesseraError
from protocols.libraries.xmtp_identity import (
    CheckedKeyPackage,
    Refused,
    check_group_message,
    check_key_package,
    check_welcome,
)
from protocols.libraries.xmtp_wire.proto import mls_api_pb2
from protocols.sovereign.config import Limits
from protocols.sovereign.errors import SovereignError
from protocols.sovereign.xmtp_node.commands import WELCOME, WELCOME_POINTER, GroupMessageInput, WelcomeInput

#: At most this many items in one request (messages, welcomes, keys, inboxes, identifiers, commit-log queries).
MAX_BATCH = 1000


class NodeRefused(TesseraError, ValueError):
    """A request the node refuses for a reason of its own (not the identity library's): status and reason."""

    def __init__(self, message: str, *, reason: str, status: grpc.StatusCode = grpc.StatusCode.INVALID_ARGUMENT):
        super().__init__(message)
        self.reason = reason
        self.status = status


def status_of(error: BaseException) -> tuple[grpc.StatusCode, str] | None:
    """The gRPC status and details a refusal is answered with; None for what is not a refusal (a fault)."""
    if isinstance(error, Refused):
        return grpc.StatusCode[error.status], f"{error.reason}: {error}"
    if isinstance(error, NodeRefused):
        return error.status, f"{error.reason}: {error}"
    if isinstance(error, SovereignError):
        limit = getattr(error, "limit", None)
        status = grpc.StatusCode.RESOURCE_EXHAUSTED if limit else grpc.StatusCode.INVALID_ARGUMENT
        return status, f"{limit or error.code.value}: {error}"
    return None


def batch(items: object, what: str) -> None:
    count = len(items)  # type: ignore[arg-type]
    if count > MAX_BATCH:
        raise NodeRefused(
            f"{count} {what} in one request; the node takes at most {MAX_BATCH}: send them in parts",
            reason="batch_too_large",
        )


def group_messages(request: mls_api_pb2.SendGroupMessagesRequest, limits: Limits) -> list[GroupMessageInput]:
    """Each message of a send, checked: it decodes as an MLS group message within the payload limit."""
    batch(request.messages, "group messages")
    checked = []
    for message in request.messages:
        if message.WhichOneof("version") != "v1":
            raise NodeRefused("a group message must be a v1 message", reason="unknown_version")
        sent = message.v1
        header = check_group_message(sent.data, max_bytes=limits.max_payload_bytes)
        checked.append(
            GroupMessageInput(
                header.group_id, header.epoch, header.is_commit, sent.data, sent.sender_hmac, sent.should_push
            )
        )
    return checked


def welcomes(request: mls_api_pb2.SendWelcomeMessagesRequest, limits: Limits) -> list[WelcomeInput]:
    """Each welcome (or welcome pointer) of a send, checked: addressed, and within the payload limit."""
    batch(request.messages, "welcomes")
    checked = []
    for message in request.messages:
        kind = message.WhichOneof("version")
        if kind == "v1":
            sent = message.v1
            check_welcome(sent.data, max_bytes=limits.max_payload_bytes)
            if len(sent.welcome_metadata) > limits.max_payload_bytes:
                raise NodeRefused(
                    f"welcome metadata of {len(sent.welcome_metadata)} bytes; at most {limits.max_payload_bytes}",
                    reason="too_large",
                )
            welcome = WelcomeInput(
                sent.installation_key,
                WELCOME,
                sent.data,
                sent.hpke_public_key,
                sent.wrapper_algorithm,
                sent.welcome_metadata,
            )
        elif kind == "welcome_pointer":
            pointer = message.welcome_pointer
            check_welcome(pointer.welcome_pointer, max_bytes=limits.max_payload_bytes)
            welcome = WelcomeInput(
                pointer.installation_key,
                WELCOME_POINTER,
                pointer.welcome_pointer,
                pointer.hpke_public_key,
                pointer.wrapper_algorithm,
                b"",
            )
        else:
            raise NodeRefused("a welcome must be a v1 welcome or a welcome pointer", reason="unknown_version")
        if not welcome.installation_key:
            raise NodeRefused("a welcome needs the installation key it is for", reason="no_installation_key")
        checked.append(welcome)
    return checked


def key_package(request: mls_api_pb2.UploadKeyPackageRequest) -> CheckedKeyPackage:
    """The uploaded KeyPackage, checked: it decodes, its signature and credential hold, its lifetime is sane."""
    return check_key_package(request.key_package.key_package_tls_serialized, now=int(time.time()))
