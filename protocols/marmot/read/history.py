"""GroupHistoryStore: the decrypted history and processing record of one group.

A store is bound to one group and to something that runs SQL (the apsw
connection a projector is given, or a ``core.db.Database``).  The write
methods are what the projectors call; the CLI and observers use the reads
(handlers and commands decide from write-side state instead:
:mod:`protocols.marmot.state.seen`).

Outer-event states move only along the transitions the plugin allows
(``Created -> Processed``, ``Retryable -> anything``, and the two rollback
transitions applied by :meth:`set_outer_states`); writing any other state
over an existing row is a no-op, which makes every write idempotent.

The processed cursor (``resume_*`` columns, historically the resume cursor)
is the greatest ``(created_at, id)`` of the outer events that were
successfully processed (Processed, ProcessedCommit, and those later
invalidated by a rollback, so it never moves backwards), and of the commits
that lost a race: they are authenticated commits of members, and counting
them whatever the arrival order keeps the cursor independent of it.  Other
failures do not move it.  It says how far processing got, our own echoes
included; what to fetch next is the fetch window's business
(:mod:`protocols.marmot.transport.fetch_window`), which our echoes never move.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from core import contract
from core.errors import InvalidInput
from protocols.marmot import facts
from protocols.marmot.cursor import Cursor, older_sql
from protocols.marmot.read.states import MessageState, OuterState

if TYPE_CHECKING:
    from protocols.libraries import mls

PROCESSED_STATES = (OuterState.PROCESSED, OuterState.PROCESSED_COMMIT, OuterState.EPOCH_INVALIDATED)
# Failures of authenticated commits (a branch lost): they count for the resume cursor.
RACE_REASONS = (facts.FailureReason.COMMIT_LOST_RACE, facts.FailureReason.INVALIDATED_BRANCH)
HIDDEN_BY_DEFAULT = (MessageState.EPOCH_INVALIDATED,)
#: A deletion marks Deleted (the first) what is shown or deleted already; an invalidated rumor stays so.
_DELETABLE = (MessageState.DELETED, MessageState.CREATED, MessageState.PROCESSED)

_LOOKUP = (
    "SELECT state, outer_created_at, epoch, rumor_id, rumor_pubkey, reason, content_type, raw "
    "FROM marmot_processed WHERE gid = ? AND outer_id = ?"
)
_MARK = (
    "INSERT INTO marmot_processed(gid, outer_id, outer_created_at, state, content_type, epoch, rumor_id, "
    "rumor_pubkey, reason, detail, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(gid, outer_id) DO UPDATE SET state = excluded.state, content_type = excluded.content_type, "
    "epoch = excluded.epoch, rumor_id = excluded.rumor_id, rumor_pubkey = excluded.rumor_pubkey, "
    "reason = excluded.reason, detail = excluded.detail, raw = excluded.raw "
    "WHERE marmot_processed.state = ?12 OR (marmot_processed.state = ?13 AND excluded.state = ?14)"
)
#: What a new outcome may overwrite (``_MARK``'s last parameters): anything over Retryable, and Processed over
#: Created (our own message seen on a relay); every other record is final.
_OVERWRITES = (OuterState.RETRYABLE, OuterState.CREATED, OuterState.PROCESSED)
# Only ever forward: the stored cursor must be strictly older than the new one.
_ADVANCE = (
    "UPDATE marmot_groups SET resume_created_at = ?, resume_id = ? "
    f"WHERE gid = ? AND {older_sql('resume_created_at', 'resume_id')}"
)
# A rumor seen again keeps its row, except that a valid copy replaces one that
# only a losing branch carried (a re-send after a rollback, as MDK upserts).
_ADD_RUMOR = (
    "INSERT INTO marmot_messages(gid, rumor_id, created_at, pubkey, kind, content, tags, outer_id, "
    "outer_created_at, epoch, state, deleted_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(gid, rumor_id) DO UPDATE SET outer_id = excluded.outer_id, "
    "outer_created_at = excluded.outer_created_at, epoch = excluded.epoch, state = excluded.state, "
    "deleted_epoch = excluded.deleted_epoch "
    "WHERE marmot_messages.state = ?13 AND excluded.state <> ?13"  # ?13: MessageState.EPOCH_INVALIDATED
)
# Deleted rows keep their content for a possible undo, but never show it (the one parameter: MessageState.DELETED).
_COLUMNS = (
    "rumor_id, created_at, pubkey, kind, CASE WHEN state = ? THEN '' ELSE content END, tags, "
    "outer_id, outer_created_at, epoch, state"
)


@attrs.frozen
class OuterRecord:
    """What the processing record says about one outer event."""

    state: OuterState = attrs.field(converter=OuterState)
    created_at: int
    epoch: int | None
    rumor_id: str | None
    rumor_pubkey: str | None
    reason: str | None
    content_type: str | None
    raw: str | None


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex()


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


class GroupHistoryStore:
    """History and processing record of the group ``gid`` (64 hex)."""

    def __init__(self, conn: contract.Connection, gid: str):
        self.conn = conn
        self.gid = gid
        self.key = bytes.fromhex(gid)

    # --- writes (projectors) -------------------------------------------------

    def mark_outer_event_processed(
        self,
        outer: Cursor,
        state: OuterState,
        *,
        content_type: mls.ContentTypeName | None = None,
        epoch: int | None = None,
        rumor_id: str | None = None,
        rumor_pubkey: str | None = None,
        reason: str | None = None,
        detail: str | None = None,
        raw: str | None = None,
    ) -> None:
        """Record the outcome for an outer event (idempotent); advance the resume cursor."""
        self.conn.execute(
            _MARK,
            (
                self.key,
                bytes.fromhex(outer.id),
                outer.created_at,
                state,
                content_type,
                epoch,
                None if rumor_id is None else bytes.fromhex(rumor_id),
                rumor_pubkey,
                reason,
                detail,
                raw,
                *_OVERWRITES,
            ),
        )
        if state in PROCESSED_STATES or (state == OuterState.FAILED and reason in RACE_REASONS):
            self.advance_resume_cursor(outer)

    def advance_resume_cursor(self, outer: Cursor) -> None:
        created, ident = outer.params()
        self.conn.execute(_ADVANCE, (created, ident, self.key, created, ident))

    def set_outer_states(
        self, outer_ids: Iterable[str], new_state: OuterState, from_states: Sequence[OuterState], **columns: str | None
    ) -> None:
        """Move the named outer events to ``new_state`` if they are in one of ``from_states``;
        ``columns`` (``reason``, ``detail``) are set with it."""
        if not set(columns) <= {"reason", "detail"}:
            raise InvalidInput(f"only reason and detail move with a state, not {sorted(columns)}")
        sets = "".join(f", {name} = ?" for name in columns)
        for outer_id in outer_ids:
            self.conn.execute(
                f"UPDATE marmot_processed SET state = ?{sets} WHERE gid = ? AND outer_id = ? "
                f"AND state IN ({_marks(from_states)})",
                (new_state, *columns.values(), self.key, bytes.fromhex(outer_id), *from_states),
            )

    def add_rumor(
        self,
        rumor: dict,
        outer: Cursor,
        *,
        epoch: int,
        state: MessageState = MessageState.PROCESSED,
        deleted_epoch: int | None = None,
    ) -> None:
        """Store a rumor (idempotent on its id), linked to the outer event it came in."""
        self.conn.execute(
            _ADD_RUMOR,
            (
                self.key,
                bytes.fromhex(rumor["id"]),
                rumor["created_at"],
                rumor["pubkey"],
                rumor["kind"],
                rumor["content"],
                json.dumps(rumor["tags"], separators=(",", ":")),
                bytes.fromhex(outer.id),
                outer.created_at,
                epoch,
                state,
                deleted_epoch if state == MessageState.DELETED else None,
                MessageState.EPOCH_INVALIDATED,
            ),
        )

    def set_rumor_states(
        self, rumor_ids: Iterable[str], new_state: MessageState, from_states: Sequence[MessageState]
    ) -> None:
        for rumor_id in rumor_ids:
            self.conn.execute(
                f"UPDATE marmot_messages SET state = ? WHERE gid = ? AND rumor_id = ? "
                f"AND state IN ({_marks(from_states)})",
                (new_state, self.key, bytes.fromhex(rumor_id), *from_states),
            )

    def delete_rumor(self, rumor_id: str, pubkey: str, epoch: int) -> None:
        """Mark a rumor Deleted by its author's deletion of ``epoch`` (the earliest deletion counts)."""
        self.conn.execute(
            "UPDATE marmot_messages SET state = ?5, deleted_epoch = min(coalesce(deleted_epoch, ?1), ?1) "
            "WHERE gid = ?2 AND rumor_id = ?3 AND pubkey = ?4 AND state IN (?5, ?6, ?7)",
            (epoch, self.key, bytes.fromhex(rumor_id), pubkey, *_DELETABLE),
        )

    def undelete_after(self, epoch: int) -> None:
        """Restore rumors whose deletions all came after ``epoch`` (a rollback dropped them)."""
        self.conn.execute(
            "UPDATE marmot_messages SET state = ?, deleted_epoch = NULL WHERE gid = ? AND state = ? AND deleted_epoch > ?",
            (MessageState.PROCESSED, self.key, MessageState.DELETED, epoch),
        )

    # --- reads -----------------------------------------------------------------

    def outer_record(self, outer_id: str) -> OuterRecord | None:
        for row in self.conn.execute(_LOOKUP, (self.key, bytes.fromhex(outer_id))):
            return OuterRecord(row[0], row[1], row[2], _hex(row[3]), row[4], row[5], row[6], row[7])
        return None

    def get_resume_cursor(self) -> Cursor | None:
        """The greatest successfully processed outer event (the processed cursor), or None before the first one."""
        for created, ident in self.conn.execute(
            "SELECT resume_created_at, resume_id FROM marmot_groups WHERE gid = ?", (self.key,)
        ):
            return None if created < 0 else Cursor(created, ident.hex())
        return None

    def query_rumors(
        self, until: Cursor | None = None, limit: int = 50, *, include_invalidated: bool = False
    ) -> list[dict]:
        """The ``limit`` newest rumors strictly older than ``until``, returned oldest first."""
        hidden = () if include_invalidated else HIDDEN_BY_DEFAULT
        where = ["gid = ?"] + ([f"state NOT IN ({_marks(hidden)})"] if hidden else [])
        params: list[Any] = [MessageState.DELETED, self.key, *hidden]
        if until is not None:
            where.append(older_sql("created_at", "rumor_id"))
            params += until.params()
        sql = (
            f"SELECT {_COLUMNS} FROM marmot_messages WHERE {' AND '.join(where)} "
            "ORDER BY created_at DESC, rumor_id DESC LIMIT ?"
        )
        rows = list(self.conn.execute(sql, (*params, limit)))
        return [_rumor_row(row) for row in reversed(rows)]

    def rumor_exists(self, rumor_id: str) -> bool:
        for _ in self.conn.execute(
            "SELECT 1 FROM marmot_messages WHERE gid = ? AND rumor_id = ?", (self.key, bytes.fromhex(rumor_id))
        ):
            return True
        return False

    # --- live updates -------------------------------------------------------------

    def subscribe(self, runtime: contract.Runtime, handler: Callable[[dict], None]) -> Callable[[], None]:
        """Call ``handler(rumor)`` for each rumor of this group once it is durably stored.

        Runs after COMMIT only (``runtime.subscribe``), and only when the
        history row really exists (a failed, isolated history projection
        stored nothing).  Returns an unsubscribe function.
        """

        def deliver(event: Any) -> None:
            if event.partition_key != self.gid:
                return
            rumor = event.data["rumor"]
            reader = GroupHistoryStore(runtime.db, self.gid)
            if reader.rumor_exists(rumor["id"]):
                handler(rumor)

        stops = [
            runtime.subscribe(kind, deliver, protocol=facts.PROTOCOL)
            for kind in (facts.RUMOR_RECEIVED, facts.MESSAGE_SENT)
        ]

        def unsubscribe() -> None:
            for stop in stops:
                stop()

        return unsubscribe


def _rumor_row(row: tuple) -> dict:
    return {
        "id": row[0].hex(),
        "created_at": row[1],
        "pubkey": row[2],
        "kind": row[3],
        "content": row[4],
        "tags": json.loads(row[5]),
        "outer_id": row[6].hex(),
        "outer_created_at": row[7],
        "epoch": row[8],
        "state": row[9],
    }
