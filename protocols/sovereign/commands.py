"""The store's commands: each one reads, decides, and returns facts; the core applies them in one transaction.

Facts (partition = group id, except KeyPackages, partitioned by installation):

- ``application_stored``, ``commit_stored``, ``proposal_stored``, ``welcome_stored``:
  one stored message with its server id, timestamp, its number in the group's
  history (``sequence``) and the members that get a pending delivery, its payload as the event's body
  (version 2; :mod:`.stored_facts`); a commit says whether it was ``superseded``
  (its epoch already had a commit: the first stored wins, seed 004's
  server-authoritative ordering);
- ``member_joined``, ``member_left``;
- ``deliveries_marked``: a recipient's messages moved to delivered or read;
- ``messages_expired``: the retention record naming the messages removed for
  good (their ``*_stored`` facts are purged in the same transaction);
- ``key_package_published``, ``key_package_consumed``;
- ``identity_published``: an installation's binding to an account address
  (partitioned by installation); a later one replaces it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

from Crypto.Hash import keccak

from core import contract, eventlog
from core.intents import PurgeEvents, WriteProtocolState
from core.records import Event, Result, derive_event_id
from protocols.libraries.delivery.records import APPLICATION, COMMIT, DELIVERED, MESSAGE_TYPES, READ, WELCOME
from protocols.sovereign import payloads
from protocols.sovereign.config import Limits
from protocols.sovereign.errors import (
    AlreadyStored,
    BadAddress,
    BadBinding,
    BadGroupId,
    BadInstallation,
    BadMessageIds,
    BindingTooLarge,
    InstallationBound,
    NoKeyPackage,
    NotAMember,
    NoWelcome,
    PayloadTooLarge,
    RateLimited,
    RecipientIsMember,
    SovereignError,
    StorageFull,
    TooManyGroups,
    TooManyInstallations,
    WelcomeNeedsRecipient,
)
from protocols.sovereign.ids import ServerOrder
from protocols.sovereign.stored_facts import stored_fact

PROTOCOL = "sovereign"
COUNTERS = "store/counters"  # protocol state: server order and stored payload bytes
SEQUENCE = "store/sequence/"  # protocol state, + group id: the last number given to a message of the group
STORED_TYPES = {code: f"{name}_stored" for code, name in MESSAGE_TYPES.items()}
# The other facts the store records (the module docs say what each means).
MEMBER_JOINED, MEMBER_LEFT = "member_joined", "member_left"
DELIVERIES_MARKED = "deliveries_marked"
MESSAGES_EXPIRED = "messages_expired"
KEY_PACKAGE_PUBLISHED, KEY_PACKAGE_CONSUMED = "key_package_published", "key_package_consumed"
IDENTITY_PUBLISHED = "identity_published"
MAX_IDS_PER_REQUEST = 1000
MAX_KEY_PACKAGES = 200
DAY_MS = 86_400_000
#: An identity binding is a signature and a few fields; the directory keeps no more than this of it.
MAX_BINDING_BYTES = 1024

_INSTALLATION = re.compile(r"[0-9a-f]{64}")
_GROUP_ID = re.compile(r"(?:[0-9a-f]{2}){1,255}")
_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


# --- checks ---------------------------------------------------------------------------------


def installation_id(value: object, what: str = "installation") -> str:
    if not isinstance(value, str) or not _INSTALLATION.fullmatch(value):
        raise BadInstallation(f"{what} must be an Ed25519 public key in 64 lowercase hex characters, got {value!r:.80}")
    return value


def group_id(value: object) -> str:
    if not isinstance(value, str) or not _GROUP_ID.fullmatch(value):
        raise BadGroupId(f"group_id must be the MLS group id in lowercase hex (1 to 255 bytes), got {value!r:.80}")
    return value


def account_address(value: object) -> str:
    """An account address, ``0x`` and 40 hex digits, in lowercase.

    Mixed case is an EIP-55 checksum and must be right: a wrong one is most
    likely a mistyped address, and binding to it would publish to nobody.
    All-lowercase or all-uppercase digits carry no checksum and are taken as they are.
    """
    if not isinstance(value, str) or not _ADDRESS.fullmatch(value):
        raise BadAddress(f"address must be 0x and 40 hex digits (an account address), got {value!r:.60}")
    digits = value[2:]
    lowered = digits.lower()
    if digits not in (lowered, digits.upper()) and digits != _eip55(lowered):
        raise BadAddress(
            f"{value}: its mixed case is not its EIP-55 checksum, so it is probably mistyped; "
            "check the address, or send it in lowercase"
        )
    return "0x" + lowered


def _eip55(digits: str) -> str:
    """The EIP-55 spelling of 40 lowercase hex digits: a letter is uppercase where keccak-256 of the text has a
    nibble of 8 or more."""
    hashed = keccak.new(digest_bits=256, data=digits.encode("ascii")).hexdigest()
    return "".join(
        digit.upper() if int(nibble, 16) >= 8 else digit for digit, nibble in zip(digits, hashed, strict=False)
    )


def message_ids(values: object) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise BadMessageIds("ids must be a list of message ids")
    ids = list(dict.fromkeys(values))
    if len(ids) > MAX_IDS_PER_REQUEST:
        raise BadMessageIds(f"at most {MAX_IDS_PER_REQUEST} ids per request, got {len(ids)}; send them in parts")
    for value in ids:
        if not isinstance(value, str) or not _ULID.fullmatch(value):
            raise BadMessageIds(f"{value!r:.40} is not a message id (a 26-character ULID)")
    return ids


def is_member(db: contract.Database, installation: str, group: str) -> bool:
    return (
        db.one("SELECT 1 FROM sovereign_group_members WHERE group_id = ? AND user_id = ?", (group, installation))
        is not None
    )


def members(db: contract.Database, group: str) -> list[str]:
    return [
        row[0]
        for row in db.all("SELECT user_id FROM sovereign_group_members WHERE group_id = ? ORDER BY user_id", (group,))
    ]


def counters(state: Any) -> dict[str, Any]:
    raw = state.get(COUNTERS)
    return {"last_id": None, "last_timestamp_us": 0, "payload_bytes": 0} if raw is None else json.loads(raw)


def counters_intent(values: dict[str, Any]) -> WriteProtocolState:
    return WriteProtocolState(COUNTERS, json.dumps(values, sort_keys=True).encode())


def next_sequence(state: Any, group: str) -> tuple[int, WriteProtocolState]:
    """The number of ``group``'s next message, and the write that takes it.

    Kept beside the server order in the store's own state (not in a read model a rebuild refills), so the
    numbers given never change; messages that expire keep theirs, and the next one goes on counting."""
    raw = state.get(SEQUENCE + group)
    number = (int(raw) if raw is not None else 0) + 1
    return number, WriteProtocolState(SEQUENCE + group, str(number).encode())


# --- storing a message ------------------------------------------------------------------------


def command_store(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Store ``payload`` (bytes, an MLSMessage) from ``sender`` in ``group_id``; ``recipient`` for a welcome."""
    limits: Limits = params.get("limits") or Limits()
    sender = installation_id(params.get("sender"), "sender")
    group = group_id(params.get("group_id"))
    payload = params.get("payload")
    if not isinstance(payload, bytes | bytearray):
        raise SovereignError("payload must be bytes (base64 on the wire)")
    payload = bytes(payload)
    if len(payload) > limits.max_payload_bytes:
        raise PayloadTooLarge(
            f"the payload is {len(payload)} bytes; the limit is {limits.max_payload_bytes}",
            limit="max_payload_bytes",
            value=len(payload),
            allowed=limits.max_payload_bytes,
        )
    described = payloads.describe(payload, group)
    digest = message_digest(group, payload)
    earlier = eventlog.by_id(ctx.db, PROTOCOL, digest)
    if earlier is not None:
        if earlier.purged:
            raise AlreadyStored("this message was stored before and has expired since; it is not stored again")
        return Result(duplicate=True)  # a retry: the service answers with the stored message
    if not is_member(ctx.db, sender, group):
        raise NotAMember(f"{sender[:12]}... is not a member of group {group[:16]}...; join it first")
    recipients = _recipients(ctx.db, sender, group, described.message_type, params.get("recipient"))
    if described.message_type == APPLICATION:
        _check_daily(ctx.db, group, ctx.now_ms, limits)
    values = counters(ctx.state)
    _check_storage(values["payload_bytes"], len(payload), limits)
    message_id, timestamp_us = ServerOrder(values["last_id"], values["last_timestamp_us"]).next(ctx.now_ms, digest)
    sequence, numbered = next_sequence(ctx.state, group)
    data: dict[str, Any] = {
        "id": message_id,
        "sender": sender,
        "ts": timestamp_us,
        "epoch": described.epoch,
        "recipients": recipients,
        "sequence": sequence,
    }
    if described.message_type == COMMIT:
        # Said of commits only, the one kind a commit stored first for its epoch supersedes (stored_facts.py).
        data["superseded"] = _superseded(ctx.db, group, described.epoch)
    event = stored_fact(STORED_TYPES[described.message_type], digest, group, ctx.now_ms, data, payload)
    values.update(
        last_id=message_id, last_timestamp_us=timestamp_us, payload_bytes=values["payload_bytes"] + len(payload)
    )
    return Result(events=[event], intents=[counters_intent(values), numbered])


def _recipients(db: contract.Database, sender: str, group: str, message_type: int, recipient: object) -> list[str]:
    if message_type != WELCOME:
        return [member for member in members(db, group) if member != sender]
    if recipient is None:
        raise WelcomeNeedsRecipient("a welcome needs its recipient: the installation it invites")
    invited = installation_id(recipient, "recipient")
    if is_member(db, invited, group):
        raise RecipientIsMember(
            f"{invited[:12]}... is a member of group {group[:16]}... already; welcomes are for newcomers"
        )
    return [invited]


def _check_daily(db: contract.Database, group: str, now_ms: int, limits: Limits) -> None:
    if not limits.max_app_messages_per_group_per_day:
        return
    sent = db.value(
        "SELECT messages FROM sovereign_daily_counts WHERE group_id = ? AND day = ?",
        (group, now_ms // DAY_MS),
        default=0,
    )
    if sent >= limits.max_app_messages_per_group_per_day:
        raise RateLimited(
            f"group {group[:16]}... has sent {sent} application messages today; the limit is "
            f"{limits.max_app_messages_per_group_per_day} a day (MLS control messages are not counted)",
            limit="max_app_messages_per_group_per_day",
            value=sent + 1,
            allowed=limits.max_app_messages_per_group_per_day,
        )


def _check_storage(stored: int, adding: int, limits: Limits) -> None:
    if limits.max_storage_mb and stored + adding > limits.max_storage_bytes:
        raise StorageFull(
            f"the store holds {stored} payload bytes; {adding} more would pass its limit of {limits.max_storage_bytes} "
            "(max_storage_mb); retention frees space as messages expire",
            limit="max_storage_mb",
            value=stored + adding,
            allowed=limits.max_storage_bytes,
        )


def _superseded(db: contract.Database, group: str, epoch: int) -> bool:
    """Whether ``epoch`` already has its commit (the group moved past it)."""
    current = db.value("SELECT epoch FROM sovereign_groups WHERE group_id = ?", (group,))
    return current is not None and epoch < current


def message_digest(group: str, payload: bytes) -> bytes:
    """The id of a message's stored fact: the same payload for the same group is the same message."""
    return hashlib.sha256(b"sovereign.message\0" + group.encode() + b"\0" + payload).digest()


# --- membership ---------------------------------------------------------------------------------


def command_join(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """``installation`` joins ``group_id``: the first member creates it; later ones need a stored welcome."""
    limits: Limits = params.get("limits") or Limits()
    who = installation_id(params.get("installation"))
    group = group_id(params.get("group_id"))
    if is_member(ctx.db, who, group):
        return Result(duplicate=True)
    if ctx.db.one("SELECT 1 FROM sovereign_group_members WHERE group_id = ? LIMIT 1", (group,)) is not None:
        welcomed = ctx.db.one(
            "SELECT 1 FROM sovereign_welcomes WHERE group_id = ? AND recipient_id = ? LIMIT 1", (group, who)
        )
        if welcomed is None:
            raise NoWelcome(
                f"group {group[:16]}... has members and no welcome for {who[:12]}...; a member must send you one"
            )
    held = ctx.db.value("SELECT count(*) FROM sovereign_group_members WHERE user_id = ?", (who,), default=0)
    if limits.max_groups_per_user and held >= limits.max_groups_per_user:
        raise TooManyGroups(
            f"{who[:12]}... is in {held} groups; the limit is {limits.max_groups_per_user}; leave one first",
            limit="max_groups_per_user",
            value=held + 1,
            allowed=limits.max_groups_per_user,
        )
    return Result(events=[_membership(MEMBER_JOINED, group, who, ctx.now_ms)])


def command_leave(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """``installation`` leaves ``group_id``: nothing stored afterwards is delivered to it."""
    who = installation_id(params.get("installation"))
    group = group_id(params.get("group_id"))
    if not is_member(ctx.db, who, group):
        return Result(duplicate=True)
    return Result(events=[_membership(MEMBER_LEFT, group, who, ctx.now_ms)])


def _membership(kind: str, group: str, who: str, now_ms: int) -> Event:
    return Event(kind, os.urandom(16), group, now_ms, {"installation": who})


# --- delivery -----------------------------------------------------------------------------------


def command_mark(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Move ``installation``'s deliveries ``ids`` to ``status`` (1 delivered, 2 read); others' are not touched."""
    who = installation_id(params.get("installation"))
    status = params.get("status")
    if status not in (DELIVERED, READ):
        raise SovereignError("status must be 1 (delivered) or 2 (read)")
    ids = message_ids(params.get("ids"))
    if not ids:
        return Result(duplicate=True)
    marks = ",".join("?" * len(ids))
    rows = ctx.db.all(
        "SELECT m.group_id, d.message_id FROM sovereign_delivery_status AS d "
        "JOIN sovereign_messages AS m ON m.id = d.message_id "
        f"WHERE d.recipient_id = ? AND d.status < ? AND d.message_id IN ({marks}) ORDER BY d.message_id",
        (who, status, *ids),
    )
    by_group: dict[str, list[str]] = {}
    for group, message_id in rows:
        by_group.setdefault(group.hex(), []).append(message_id)  # the row keeps the group's bytes
    at = ctx.now_ms * 1000
    events = [
        Event(
            DELIVERIES_MARKED,
            os.urandom(16),
            group,
            ctx.now_ms,
            {"recipient": who, "ids": found, "status": status, "at": at},
        )
        for group, found in sorted(by_group.items())
    ]
    return Result(events=events) if events else Result(duplicate=True)


# --- retention ----------------------------------------------------------------------------------


#: The messages to expire (``{marks}``: one ``?`` per id), with the log rows of their stored facts.  In id
#: order: the IN list is looked up in that order, so nothing is sorted.
EXPIRING = (
    "SELECT m.group_id, m.id, m.payload_size, m.seq FROM sovereign_messages AS m WHERE m.id IN ({marks}) ORDER BY m.id"
)


def command_expire(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Remove messages ``ids`` for good (``reason``: age or storage): one retention fact per group, each purging
    its messages' stored facts, and the stored-bytes counter lowered."""
    ids = message_ids(params.get("ids"))
    reason = str(params.get("reason") or "age")
    if not ids:
        return Result(duplicate=True)
    marks = ",".join("?" * len(ids))
    rows = ctx.db.all(EXPIRING.format(marks=marks), tuple(ids))
    digests = eventlog.ids_at_seqs(ctx.db, [row[3] for row in rows])  # the facts' ids: the messages' digests
    by_group: dict[str, list[tuple[str, bytes]]] = {}
    for group, message_id, _, seq in rows:
        by_group.setdefault(group.hex(), []).append((message_id, digests[seq]))  # the row keeps the group's bytes
    events: list[Event] = []
    intents: list[Any] = []
    for group, found in sorted(by_group.items()):
        epoch = ctx.db.value("SELECT epoch FROM sovereign_groups WHERE group_id = ?", (group,))
        data = {"ids": [m for m, _ in found], "reason": reason, "group_epoch": epoch}
        recorded = Event(MESSAGES_EXPIRED, os.urandom(16), group, ctx.now_ms, data)
        events.append(recorded)
        intents.append(PurgeEvents([digest for _, digest in found], recorded_by=recorded.event_id))
    if not events:
        return Result(duplicate=True)
    values = counters(ctx.state)
    values["payload_bytes"] = max(0, values["payload_bytes"] - sum(row[2] for row in rows))
    intents.append(counters_intent(values))
    return Result(events=events, intents=intents)


# --- KeyPackages ------------------------------------------------------------------------------------


def command_key_package_publish(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Add ``installation``'s one-time KeyPackages (bytes each); ones already held are skipped."""
    who = installation_id(params.get("installation"))
    given = params.get("key_packages")
    if isinstance(given, bytes | str) or not isinstance(given, Sequence) or not given:
        raise SovereignError("key_packages must be a non-empty list of KeyPackages")
    held = ctx.db.value("SELECT count(*) FROM sovereign_key_packages WHERE installation = ?", (who,), default=0)
    if held + len(given) > MAX_KEY_PACKAGES:
        raise SovereignError(f"{who[:12]}... holds {held} KeyPackages; at most {MAX_KEY_PACKAGES} may be stocked")
    events = []
    seen: set[str] = set()
    for data in given:
        if not isinstance(data, bytes | bytearray):
            raise SovereignError("each KeyPackage must be bytes (base64 on the wire)")
        ref = payloads.key_package_ref_of(who, bytes(data), ctx.now_ms // 1000)
        exists = ctx.db.one("SELECT 1 FROM sovereign_key_packages WHERE installation = ? AND ref = ?", (who, ref))
        if exists is not None or ref in seen:
            continue
        seen.add(ref)
        body = {"ref": ref, "key_package": base64.b64encode(bytes(data)).decode("ascii")}
        events.append(Event(KEY_PACKAGE_PUBLISHED, bytes.fromhex(ref), who, ctx.now_ms, body))
    return Result(events=events) if events else Result(duplicate=True)


def command_key_package_consume(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Use up ``installation``'s KeyPackage ``ref`` (the caller has read it in this transaction)."""
    who = installation_id(params.get("installation"))
    ref = str(params.get("ref"))
    if ctx.db.one("SELECT 1 FROM sovereign_key_packages WHERE installation = ? AND ref = ?", (who, ref)) is None:
        raise NoKeyPackage(f"{who[:12]}... has no KeyPackage left; ask them to publish more")
    return Result(events=[Event(KEY_PACKAGE_CONSUMED, os.urandom(16), who, ctx.now_ms, {"ref": ref})])


# --- the identity directory ---------------------------------------------------------------------------

_BINDING_OF = "SELECT address, binding FROM sovereign_identities WHERE installation = ?"
_INSTALLATIONS_OF = "SELECT count(*) FROM sovereign_identities WHERE address = ?"


def command_identity_publish(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """``installation`` publishes its ``binding`` (opaque bytes) to account ``address``; it replaces the
    installation's earlier binding, for the same address only (an installation belongs to one account)."""
    limits: Limits = params.get("limits") or Limits()
    who = installation_id(params.get("installation"))
    address = account_address(params.get("address"))
    binding = _binding(params.get("binding"))
    held = ctx.db.one(_BINDING_OF, (who,))
    if held is not None and held[0] != address:
        raise InstallationBound(
            f"{who[:12]}... is bound to {held[0]} already and an installation belongs to one account; "
            f"use a new installation (a new key) for {address}"
        )
    if held is not None and bytes(held[1]) == binding:
        return Result(duplicate=True)
    if held is None:
        _check_installations(ctx.db, address, limits)
    data = {"address": address, "binding": base64.b64encode(binding).decode("ascii")}
    return Result(events=[Event(IDENTITY_PUBLISHED, _identity_event_id(ctx.db, who, binding), who, ctx.now_ms, data)])


def _binding(value: object) -> bytes:
    if not isinstance(value, bytes | bytearray) or not value:
        raise BadBinding("binding must be the non-empty bytes your account signed (base64 on the wire)")
    if len(value) > MAX_BINDING_BYTES:
        raise BindingTooLarge(
            f"the binding is {len(value)} bytes; the directory keeps at most {MAX_BINDING_BYTES}",
            limit="max_binding_bytes",
            value=len(value),
            allowed=MAX_BINDING_BYTES,
        )
    return bytes(value)


def _check_installations(db: contract.Database, address: str, limits: Limits) -> None:
    bound = db.value(_INSTALLATIONS_OF, (address,), default=0)
    if limits.max_installations_per_address and bound >= limits.max_installations_per_address:
        raise TooManyInstallations(
            f"{address} has {bound} installations bound; the server allows {limits.max_installations_per_address} "
            "per address (max_installations_per_address, set by its operator)",
            limit="max_installations_per_address",
            value=bound + 1,
            allowed=limits.max_installations_per_address,
        )


def _identity_event_id(db: contract.Database, who: str, binding: bytes) -> bytes:
    """SHA-256 over the installation and its binding, and how often that binding was published before.

    The count keeps a binding published again after another one (A, B, then A) from taking the id of its
    first publication, which the log would drop as a duplicate.
    """
    earlier = 0
    while (
        eventlog.by_id(db, PROTOCOL, event_id := derive_event_id("sovereign.identity", who, binding, earlier))
        is not None
    ):
        earlier += 1
    return event_id
