"""The XMTP node's writes as the sovereign plugin's commands: each one transaction, returning facts.

Facts (protocol ``sovereign``):

- ``xmtp_group_message_stored`` (partition: the group id in hex; id: the payload's digest): one group
  message with its node-wide ``id``, ``created_ns`` and what the node read from its MLS header;
- ``xmtp_welcome_stored`` (partition: the installation key in hex): a welcome or a welcome pointer;
- ``xmtp_key_package_uploaded`` (partition: the installation key in hex): the installation's latest
  KeyPackage, checked;
- ``xmtp_identity_updated`` (partition: the inbox id): one identity update with its sequence id in the
  inbox, and the identifiers it ``claimed`` for the inbox and ``released``;
- ``xmtp_commit_logged`` (partition: the group id in hex): one commit-log entry;
- ``xmtp_group_messages_expired`` (partition: the group id in hex) and ``xmtp_welcomes_expired`` (partition:
  the installation key in hex): the retention records naming what was removed for good (the stored facts
  are purged in the same transaction, and leave tombstones).

What numbers the node gives (message, welcome and commit-log ids, the last ``created_ns``, stored bytes)
lives in protocol state beside each inbox's state after its last update, so they never change and a
rebuild of the tables (which read only the facts) reproduces the same rows.  Checks that need no state
ran before the command (:mod:`.checks`); the ones that need it (an identity update against its inbox's
state, the daily and storage limits) raise here, and the whole request is undone.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

import attrs

from core import contract, eventlog
from core.intents import PurgeEvents, WriteProtocolState
from core.records import Event, Result
from protocols.libraries.xmtp_identity import apply_identity_update
from protocols.libraries.xmtp_wire.proto import associations_pb2
from protocols.sovereign.commands import PROTOCOL
from protocols.sovereign.config import Limits
from protocols.sovereign.errors import RateLimited, StorageFull
from protocols.sovereign.xmtp_node import inbox_state

GROUP_MESSAGE_STORED = "xmtp_group_message_stored"
WELCOME_STORED = "xmtp_welcome_stored"
KEY_PACKAGE_UPLOADED = "xmtp_key_package_uploaded"
IDENTITY_UPDATED = "xmtp_identity_updated"
COMMIT_LOGGED = "xmtp_commit_logged"
GROUP_MESSAGES_EXPIRED = "xmtp_group_messages_expired"
WELCOMES_EXPIRED = "xmtp_welcomes_expired"
#: At most this many ids in one expiry (one transaction).
MAX_EXPIRE = 5000

COUNTERS = "xmtp/counters"  # protocol state: the node's last ids, last created_ns and stored payload bytes
DAY_NS = 86_400 * 10**9
WELCOME, WELCOME_POINTER = 0, 1


@attrs.frozen
class GroupMessageInput:
    """A group message as checked before its command: the payload and what its MLS header says."""

    group_id: bytes
    epoch: int
    is_commit: bool
    data: bytes
    sender_hmac: bytes
    should_push: bool


@attrs.frozen
class WelcomeInput:
    """A welcome (``kind`` WELCOME) or a welcome pointer (WELCOME_POINTER, ``data`` the pointer), checked."""

    installation_key: bytes
    kind: int
    data: bytes
    hpke_public_key: bytes
    wrapper_algorithm: int
    welcome_metadata: bytes


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _counters(ctx: contract.Context) -> dict[str, int]:
    raw = ctx.state.get(COUNTERS)
    held = {} if raw is None else json.loads(raw)
    return {
        "message": 0,
        "welcome": 0,
        "commit_log": 0,
        "identity_update": 0,
        "created_ns": 0,
        "payload_bytes": 0,
        **held,
    }


def _counters_intent(values: dict[str, int]) -> WriteProtocolState:
    return WriteProtocolState(COUNTERS, json.dumps(values, sort_keys=True).encode())


def _created_ns(ctx: contract.Context, values: dict[str, int]) -> int:
    """Now, in nanoseconds, never before the last stamp given (the clock may step back)."""
    stamp = max(ctx.now_ms * 1_000_000, values["created_ns"] + 1)
    values["created_ns"] = stamp
    return stamp


def digest(kind: str, *parts: bytes) -> bytes:
    """The id of a stored fact: the same payload to the same place is the same fact (a retry is stored once)."""
    hashed = hashlib.sha256(b"sovereign.xmtp." + kind.encode() + b"\0")
    for part in parts:
        hashed.update(len(part).to_bytes(8, "big") + part)
    return hashed.digest()


def _check_storage(values: dict[str, int], adding: int, limits: Limits) -> None:
    if limits.max_storage_mb and values["payload_bytes"] + adding > limits.max_storage_bytes:
        raise StorageFull(
            f"the XMTP node holds {values['payload_bytes']} payload bytes; {adding} more would pass its limit of "
            f"{limits.max_storage_bytes} (max_storage_mb); raise the limit or let retention free space",
            limit="max_storage_mb",
            value=values["payload_bytes"] + adding,
            allowed=limits.max_storage_bytes,
        )


def _check_daily(ctx: contract.Context, group_id: bytes, day: int, sending: int, limits: Limits) -> None:
    allowed = limits.max_app_messages_per_group_per_day
    if not allowed or not sending:
        return
    sent = ctx.db.value(
        "SELECT messages FROM sovereign_xmtp_daily_counts WHERE group_id = ? AND day = ?", (group_id, day), default=0
    )
    if sent + sending > allowed:
        raise RateLimited(
            f"group {group_id.hex()[:16]}... has stored {sent} application messages today; the limit is {allowed} "
            "a day (commits are not counted)",
            limit="max_app_messages_per_group_per_day",
            value=sent + sending,
            allowed=allowed,
        )


# --- group messages ---------------------------------------------------------------------------------


def command_send_group_messages(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Store ``messages`` (GroupMessageInput, checked) in the order given; payloads stored before are skipped."""
    limits: Limits = params["limits"]
    messages: Sequence[GroupMessageInput] = params["messages"]
    values = _counters(ctx)
    events: list[Event] = []
    seen: set[bytes] = set()
    applications: dict[bytes, int] = {}
    for message in messages:
        event_id = digest("group_message", message.group_id, message.data)
        if event_id in seen or eventlog.by_id(ctx.db, PROTOCOL, event_id) is not None:
            continue  # a retry (or the same payload twice in one request): stored once
        seen.add(event_id)
        if not message.is_commit:
            applications[message.group_id] = applications.get(message.group_id, 0) + 1
        values["message"] += 1
        data = {
            "id": values["message"],
            "created_ns": _created_ns(ctx, values),
            "data": _b64(message.data),
            "sender_hmac": _b64(message.sender_hmac),
            "should_push": message.should_push,
            "is_commit": message.is_commit,
            "epoch": message.epoch,
        }
        events.append(Event(GROUP_MESSAGE_STORED, event_id, message.group_id.hex(), ctx.now_ms, data))
    if not events:
        return Result(duplicate=True)
    day = values["created_ns"] // DAY_NS
    for group_id, sending in applications.items():
        _check_daily(ctx, group_id, day, sending, limits)
    adding = sum(len(message.data) for message in messages)
    _check_storage(values, adding, limits)
    values["payload_bytes"] += adding
    return Result(events=events, intents=[_counters_intent(values)])


# --- welcomes -------------------------------------------------------------------------------------------


def command_send_welcomes(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Store ``welcomes`` (WelcomeInput, checked), each under its installation key; retries are skipped."""
    limits: Limits = params["limits"]
    welcomes: Sequence[WelcomeInput] = params["welcomes"]
    values = _counters(ctx)
    events: list[Event] = []
    seen: set[bytes] = set()
    for welcome in welcomes:
        event_id = digest("welcome", welcome.installation_key, bytes([welcome.kind]), welcome.data)
        if event_id in seen or eventlog.by_id(ctx.db, PROTOCOL, event_id) is not None:
            continue
        seen.add(event_id)
        values["welcome"] += 1
        data = {
            "id": values["welcome"],
            "created_ns": _created_ns(ctx, values),
            "kind": welcome.kind,
            "data": _b64(welcome.data),
            "hpke_public_key": _b64(welcome.hpke_public_key),
            "wrapper_algorithm": welcome.wrapper_algorithm,
            "welcome_metadata": _b64(welcome.welcome_metadata),
        }
        events.append(Event(WELCOME_STORED, event_id, welcome.installation_key.hex(), ctx.now_ms, data))
    if not events:
        return Result(duplicate=True)
    adding = sum(len(welcome.data) + len(welcome.welcome_metadata) for welcome in welcomes)
    _check_storage(values, adding, limits)
    values["payload_bytes"] += adding
    return Result(events=events, intents=[_counters_intent(values)])


# --- key packages ---------------------------------------------------------------------------------------


def command_upload_key_package(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Keep ``key_package`` (bytes, checked) as the latest of ``installation_key``, for ``inbox_id``."""
    installation_key: bytes = params["installation_key"]
    key_package: bytes = params["key_package"]
    event_id = digest("key_package", installation_key, key_package)
    if eventlog.by_id(ctx.db, PROTOCOL, event_id) is not None:
        return Result(duplicate=True)
    values = _counters(ctx)
    data = {
        "inbox_id": params["inbox_id"],
        "key_package": _b64(key_package),
        "not_after": params["not_after"],
        "uploaded_ns": _created_ns(ctx, values),
    }
    event = Event(KEY_PACKAGE_UPLOADED, event_id, installation_key.hex(), ctx.now_ms, data)
    return Result(events=[event], intents=[_counters_intent(values)])


# --- identity updates -----------------------------------------------------------------------------------


def command_publish_identity_update(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Apply ``update`` (an IdentityUpdate; ``raw`` its bytes) to its inbox's state and store it.

    The inbox's state after its last update is kept in protocol state (:mod:`.inbox_state`), so checking an
    update costs one update's signatures, not a replay of the inbox's whole history.  A byte-identical
    update published again is a client's retry: stored once, answered as stored.
    """
    update: associations_pb2.IdentityUpdate = params["update"]
    raw: bytes = params["raw"]
    event_id = digest("identity_update", raw)
    if eventlog.by_id(ctx.db, PROTOCOL, event_id) is not None:
        return Result(duplicate=True)
    before = inbox_state.load(ctx.state, update.inbox_id)
    values = _counters(ctx)
    # Node-wide, as XMTP's own nodes number them (one sequence for every inbox's updates): libxmtp looks a
    # group's members up in its association-state cache by inbox ids and sequence ids matched separately, so two
    # inboxes sharing a number make list_members fail (InvalidGroupMembership).  Never below the inbox's own last
    # one, for a store that numbered per inbox before.
    sequence_id = max(values["identity_update"], before.sequence_id if before is not None else 0) + 1
    values["identity_update"] = sequence_id
    after = apply_identity_update(before, update, sequence_id=sequence_id)
    held = before.identifiers if before is not None else frozenset()
    data = {
        "sequence_id": sequence_id,
        "server_timestamp_ns": _created_ns(ctx, values),
        "update": _b64(raw),
        "claimed": sorted([identifier.value, identifier.kind] for identifier in after.identifiers - held),
        "released": sorted([identifier.value, identifier.kind] for identifier in held - after.identifiers),
    }
    event = Event(IDENTITY_UPDATED, event_id, update.inbox_id, ctx.now_ms, data)
    return Result(events=[event], intents=[_counters_intent(values), inbox_state.save(after)])


# --- commit log -----------------------------------------------------------------------------------------


def command_publish_commit_log(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Append ``entries`` ((group id, serialised entry, signature)) to their groups' commit logs."""
    entries: Sequence[tuple[bytes, bytes, bytes]] = params["entries"]
    values = _counters(ctx)
    events: list[Event] = []
    seen: set[bytes] = set()
    for group_id, entry, signature in entries:
        event_id = digest("commit_log", group_id, entry, signature)
        if event_id in seen or eventlog.by_id(ctx.db, PROTOCOL, event_id) is not None:
            continue
        seen.add(event_id)
        values["commit_log"] += 1
        data = {"id": values["commit_log"], "entry": _b64(entry), "signature": _b64(signature)}
        events.append(Event(COMMIT_LOGGED, event_id, group_id.hex(), ctx.now_ms, data))
    if not events:
        return Result(duplicate=True)
    return Result(events=events, intents=[_counters_intent(values)])


# --- retention ------------------------------------------------------------------------------------------


def command_expire(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Remove group messages (``kind`` "group_messages") or welcomes ("welcomes") ``ids`` for good: one retention
    fact per group or installation key, each purging its rows' stored facts; the stored bytes go down."""
    ids = [int(value) for value in params["ids"]][:MAX_EXPIRE]
    if not ids:
        return Result(duplicate=True)
    marks = ",".join("?" * len(ids))
    values = _counters(ctx)
    by_key: dict[bytes, list[tuple[int, bytes, int]]] = {}
    if params["kind"] == "group_messages":
        rows = ctx.db.all(
            f"SELECT id, group_id, digest, length(data), created_ns FROM sovereign_xmtp_group_messages "
            f"WHERE id IN ({marks}) ORDER BY id",
            tuple(ids),
        )
        fact = GROUP_MESSAGES_EXPIRED
        for message_id, group_id, event_id, size, _ in rows:
            by_key.setdefault(bytes(group_id), []).append((message_id, bytes(event_id), size))
        through_day = max((row[4] for row in rows), default=0) // DAY_NS
    else:
        rows = ctx.db.all(
            f"SELECT id, installation_key, kind, data, length(data) + length(welcome_metadata) "
            f"FROM sovereign_xmtp_welcomes WHERE id IN ({marks}) ORDER BY id",
            tuple(ids),
        )
        fact = WELCOMES_EXPIRED
        for welcome_id, key, kind, data, size in rows:
            event_id = digest("welcome", bytes(key), bytes([kind]), bytes(data))
            by_key.setdefault(bytes(key), []).append((welcome_id, event_id, size))
        through_day = 0
    events: list[Event] = []
    intents: list[Any] = []
    for key, found in by_key.items():
        data = {"ids": [row[0] for row in found], "reason": str(params.get("reason") or "age")}
        if fact == GROUP_MESSAGES_EXPIRED:
            data["through_day"] = through_day  # the daily counts of days that far back go too (see projectors)
        recorded = Event(fact, os.urandom(16), key.hex(), ctx.now_ms, data)
        events.append(recorded)
        intents.append(PurgeEvents([row[1] for row in found], recorded_by=recorded.event_id))
        values["payload_bytes"] = max(0, values["payload_bytes"] - sum(row[2] for row in found))
    if not events:
        return Result(duplicate=True)
    intents.append(_counters_intent(values))
    return Result(events=events, intents=intents)
