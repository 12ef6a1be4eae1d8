"""The facts the Marmot plugin records, and their stable ids.

Every fact about an outer event derives its id from the group, the outer
event id and the group's rollback *generation*: replaying the same input in
the same generation derives the same id (so the append is a no-op), while an
outer event that is legitimately processed again after a rollback (a
Retryable event that fails once more, a winning commit applied during a
rollback) gets a fresh id.

Failure reasons come from a short fixed vocabulary (:data:`REASONS`); the
detail is text the plugin writes itself, never an exception message, so no
key material or raw decoder output can leak into the log.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import attrs

from core.records import Event, derive_event_id
from protocols.marmot.cursor import Cursor

if TYPE_CHECKING:
    from protocols.libraries import mls

#: The plugin's name: the ``protocol`` of its events, state, items and read models.
PROTOCOL = "marmot"

GROUP_JOINED = "group_joined"
MESSAGE_SENT = "message_sent"
RUMOR_RECEIVED = "rumor_received"
OWN_MESSAGE_ECHOED = "own_message_echoed"
OUTER_PROCESSED = "outer_processed"
COMMIT_APPLIED = "commit_applied"
COMMIT_REWRAPPED = "commit_rewrapped"
PROPOSAL_RECEIVED = "proposal_received"
DELETION_RECEIVED = "deletion_received"
OUTER_FAILED = "outer_failed"
OUTER_INVALIDATED = "outer_invalidated"
EPOCH_ROLLED_BACK = "epoch_rolled_back"
ACCOUNT_CREATED = "account_created"
KEY_PACKAGE_PUBLISHED = "key_package_published"
INBOX_RELAYS_SET = "inbox_relays_set"
CHANGE_PUBLISHED = "change_published"  # our commit or proposal, sent and not yet applied
MERGED_LOCALLY = "merged_locally"  # our commit to a group nobody else is in: applied at once
WELCOMES_SENT = "welcomes_sent"
WELCOME_RECEIVED = "welcome_received"  # an invitation: pending until accepted or declined
WELCOME_REFUSED = "welcome_refused"  # a gift wrap to us that is no invitation we could take
WELCOME_ACCEPTED = "welcome_accepted"
WELCOME_DECLINED = "welcome_declined"
ACCOUNT = "account"  # the partition of facts about our account rather than a group
INBOX = "inbox"  # the partition of invitations (and of the gift wraps that bring them)


class ChangeAction(enum.StrEnum):
    """What a change of ours does (``action`` of ``change_published`` and ``merged_locally``)."""

    INVITE = "invite"
    REMOVE = "remove"
    SELF_UPDATE = "self_update"
    LEAVE = "leave"  # a self-remove proposal, not a commit


class ProposalAction(enum.StrEnum):
    """What we did with a received proposal (``action`` of ``proposal_received``)."""

    PENDING = "pending"  # kept for an admin's commit
    IGNORED = "ignored"
    AUTO_COMMITTED = "auto_committed"  # a member's self-removal, committed by us as an admin


class DeletionEffect(enum.StrEnum):
    """What a deletion does to each rumor it names (``effect`` of each target of ``deletion_received``)."""

    DELETED = "deleted"
    PENDING = "pending"  # the target has not arrived: applied if it comes from the same author
    IGNORED = "ignored"  # someone else's rumor


# Facts that close the processing of an outer event successfully.
PROCESSED_FACTS = (
    RUMOR_RECEIVED,
    OWN_MESSAGE_ECHOED,
    OUTER_PROCESSED,
    COMMIT_APPLIED,
    COMMIT_REWRAPPED,
    PROPOSAL_RECEIVED,
    DELETION_RECEIVED,
)


class FailureReason(enum.StrEnum):
    """Why an outer event failed (``reason`` of ``outer_failed``, ``marmot_processed.reason``): a short fixed
    vocabulary, each word explained in :data:`REASONS`."""

    MALFORMED_PAYLOAD = "malformed_payload"
    INVALID_MESSAGE = "invalid_message"
    WRONG_GROUP = "wrong_group"
    UNDECRYPTABLE = "undecryptable"
    BAD_SIGNATURE = "bad_signature"
    REPLAYED = "replayed"
    EPOCH_EXPIRED = "epoch_expired"
    NOT_A_MEMBER = "not_a_member"
    INVALID_RUMOR = "invalid_rumor"
    SENDER_MISMATCH = "sender_mismatch"
    UNAUTHORIZED_COMMIT = "unauthorized_commit"
    NO_ADMIN_LEFT = "no_admin_left"
    IDENTITY_CHANGED = "identity_changed"
    CONFIRMATION_MISMATCH = "confirmation_mismatch"
    COMMIT_LOST_RACE = "commit_lost_race"
    INVALIDATED_BRANCH = "invalidated_branch"
    COMMIT_TOO_OLD = "commit_too_old"
    RETRY_EXHAUSTED = "retry_exhausted"


REASONS: dict[FailureReason, str] = {
    FailureReason.MALFORMED_PAYLOAD: "the content is not a group-event envelope (base64, nonce and tag)",
    FailureReason.INVALID_MESSAGE: "the payload is not a well-formed MLS message",
    FailureReason.WRONG_GROUP: "the MLS message names another group",
    FailureReason.UNDECRYPTABLE: "the MLS layer could not decrypt it",
    FailureReason.BAD_SIGNATURE: "the MLS signature does not verify",
    FailureReason.REPLAYED: "the MLS message key was already used",
    FailureReason.EPOCH_EXPIRED: "its epoch is no longer retained",
    FailureReason.NOT_A_MEMBER: "we are not a member of the group any more",
    FailureReason.INVALID_RUMOR: "the decrypted payload is not a valid rumor",
    FailureReason.SENDER_MISMATCH: "the rumor's pubkey differs from the MLS sender",
    FailureReason.UNAUTHORIZED_COMMIT: "the committer is not an admin and did more than a self-update or SelfRemoves",
    FailureReason.NO_ADMIN_LEFT: "the commit would leave the group without an admin member",
    FailureReason.IDENTITY_CHANGED: "the commit changes a member's identity",
    FailureReason.CONFIRMATION_MISMATCH: "the commit's confirmation tag does not match",
    FailureReason.COMMIT_LOST_RACE: "a better commit won its epoch",
    FailureReason.INVALIDATED_BRANCH: "a commit on a branch that lost its race",
    FailureReason.COMMIT_TOO_OLD: "its epoch is outside the rollback window",
    # Only in databases written before waiting stopped spending attempts.
    FailureReason.RETRY_EXHAUSTED: "no retained epoch key opened it within the retry budget",
}
# Failures that depend on which branch of a race won: a rollback decides them again.
RETRYABLE_REASONS = frozenset(
    {
        FailureReason.UNDECRYPTABLE,
        FailureReason.COMMIT_LOST_RACE,
        FailureReason.INVALIDATED_BRANCH,
        FailureReason.RETRY_EXHAUSTED,
    }
)


@attrs.frozen
class Outer:
    """The outer (kind-445) event an item carries; its id, time and cursor are read once, when it is made."""

    gid: str
    event: dict = attrs.field(repr=False)
    id: str = attrs.field(init=False)
    created_at: int = attrs.field(init=False)
    cursor: Cursor = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "id", self.event["id"])
        object.__setattr__(self, "created_at", self.event["created_at"])
        object.__setattr__(self, "cursor", Cursor(self.created_at, self.id))

    @property
    def route(self) -> str:
        """The ``nostr_group_id`` in its ``h`` tag (checked when it was decoded)."""
        return next(tag[1] for tag in self.event["tags"] if tag and tag[0] == "h")


def fact_id(kind: str, gid: str, outer_id: str, generation: int) -> bytes:
    return derive_event_id(PROTOCOL, kind, gid, outer_id, generation)


def about(fact_type: str, outer: Outer, generation: int, /, **data: Any) -> Event:
    """A fact about ``outer`` (its time is the outer event's time)."""
    payload = {"outer_id": outer.id, "outer_created_at": outer.created_at, "generation": generation, **data}
    return Event(
        fact_type, fact_id(fact_type, outer.gid, outer.id, generation), outer.gid, outer.created_at * 1000, payload
    )


def failed(
    outer: Outer,
    generation: int,
    reason: FailureReason,
    detail: str = "",
    *,
    epoch: int | None = None,
    content_type: mls.ContentTypeName | None = None,
) -> Event:
    """Outer event failed for ``reason``."""
    return about(
        OUTER_FAILED,
        outer,
        generation,
        reason=reason,
        detail=detail or REASONS[reason],
        epoch=epoch,
        content_type=content_type,
    )


def joined(
    gid: str, epoch: int, self_pubkey: str, members: int, admins: list[str], welcome_digest: str, now_ms: int
) -> Event:
    data = {"epoch": epoch, "self": self_pubkey, "members": members, "admins": admins, "joined_at_ms": now_ms}
    return Event(GROUP_JOINED, derive_event_id(PROTOCOL, GROUP_JOINED, gid, welcome_digest), gid, now_ms, data)


def account_created(pubkey: str, now_ms: int) -> Event:
    return Event(
        ACCOUNT_CREATED, derive_event_id(PROTOCOL, ACCOUNT_CREATED, pubkey), ACCOUNT, now_ms, {"pubkey": pubkey}
    )


def invitation(fact_type: str, key: str, now_ms: int, **data: Any) -> Event:
    """A ``welcome_*`` fact about the invitation or gift wrap ``key`` names."""
    return Event(fact_type, derive_event_id(PROTOCOL, fact_type, key), INBOX, now_ms, data)


def inbox_relays_set(list_event_id: str, relays: list[str], now_ms: int) -> Event:
    data = {"event_id": list_event_id, "relays": relays}
    return Event(INBOX_RELAYS_SET, derive_event_id(PROTOCOL, INBOX_RELAYS_SET, list_event_id), ACCOUNT, now_ms, data)


def key_package_published(ref: str, event_id: str, relays: tuple[str, ...], last_resort: bool, now_ms: int) -> Event:
    data = {"ref": ref, "event_id": event_id, "relays": list(relays), "last_resort": last_resort}
    return Event(KEY_PACKAGE_PUBLISHED, derive_event_id(PROTOCOL, KEY_PACKAGE_PUBLISHED, ref), ACCOUNT, now_ms, data)


def merged_locally(
    gid: str, epoch: int, members: int, admins: list[str], action: ChangeAction, detail: dict, now_ms: int
) -> Event:
    """Our commit of ``epoch`` applied without publishing (we were the group's only member)."""
    data = {"epoch": epoch, "new_epoch": epoch + 1, "action": action, "members": members, "admins": admins, **detail}
    return Event(MERGED_LOCALLY, derive_event_id(PROTOCOL, MERGED_LOCALLY, gid, epoch), gid, now_ms, data)


def welcomes_sent(outer: Outer, generation: int, epoch: int, digest: str, count: int) -> Event:
    return about(WELCOMES_SENT, outer, generation, epoch=epoch, digest=digest, count=count)


@attrs.frozen
class Rollback:
    """What a rollback changes besides the group state, as the handler worked it out.

    Attributes:
        invalidated: outer events processed on the losing branch (-> EpochInvalidated).
        invalidated_rumors: their rumor ids.
        lost_commits: wrappers of the commit that lost its epoch (-> Failed commit_lost_race).
        won_commits: earlier wrappers of the winning commit (-> ProcessedCommit).
        dead_commits: commits applied above the epoch on the losing branch (-> Failed invalidated_branch).
        retryable: outer events decided on some branch that may now read differently (-> Retryable, re-queued).
    """

    invalidated: tuple[str, ...] = ()
    invalidated_rumors: tuple[str, ...] = ()
    lost_commits: tuple[str, ...] = ()
    won_commits: tuple[str, ...] = ()
    dead_commits: tuple[str, ...] = ()
    retryable: tuple[str, ...] = ()


def rolled_back(outer: Outer, epoch: int, loser: Cursor, generation: int, changes: Rollback) -> Event:
    """One fact per rollback: which commit won, and how every event it touches moves."""
    event_id = derive_event_id(PROTOCOL, EPOCH_ROLLED_BACK, outer.gid, epoch, outer.id, loser.id, generation)
    data = {
        "epoch": epoch,
        "winner": {"outer_id": outer.id, "created_at": outer.created_at},
        "loser": {"outer_id": loser.id, "created_at": loser.created_at},
        "generation": generation,
        **{name: list(value) for name, value in attrs.asdict(changes).items()},
    }
    return Event(EPOCH_ROLLED_BACK, event_id, outer.gid, outer.created_at * 1000, data)
