"""Reading a topic again: payloads that fail, cursors the server does not know, messages stepped over.

A server, or anything between it and us, can hand out a page with a payload
left out, damaged, doubled, out of order, or an old one again under an id it
made up.  None of that may move a topic's cursor past something we need, and
none of it may leave us stuck without saying so:

* **A payload that fails** (it does not decrypt, does not apply, or is of a
  later epoch than ours) is not passed by on its first reading: the page
  stops before it (what came before is committed) and the topic is read
  again from there.  When the server hands out the same bytes under the same
  id again, they are what it holds: a payload of our epoch or earlier is then
  refused for good (parked with its reason) and passed by; one of a later
  epoch means a commit before it is missing here, and the topic is read
  again from the commit that opened our epoch.  If the commit is still not
  there, we cannot follow the group: :class:`GroupNeedsRejoin` (the caller
  marks the group with the reason) and the cursor stays before the gap, so
  every later sync tries again, and the mark goes when the group moves on.
* **A cursor the server does not know** (``unknown_cursor``: one it never
  gave, or whose message retention expired) restarts the topic from the
  commit that opened our epoch, else from the oldest message the server
  holds, said at WARNING.
* **Messages stepped over**: a sender's later message was read before an
  earlier one, whose key then waits in the group state
  (:func:`protocols.libraries.mls.skipped_generations`), or the cursor passed a
  message of ours the server took without our reading it back.  Left out of
  a page, it would never come again; so the topic is read again from the
  commit that opened the oldest epoch with such a message, once a sync, for
  at most :data:`MAX_SKIP_REREADS` syncs while the same ones are missing (a
  sender may also have built a message and never sent it).  A message left
  out that was its sender's last of its epoch leaves no such trace in the
  keys; the server's numbers show it:
* **Numbers skipped** (:mod:`.numbering`): a message that is not the next by
  the server's numbers stops the page like a payload that fails, and the
  topic is read again from the cursor.  When the server repeats the jump,
  the numbers are kept as missing and read for like stepped-over messages,
  from just before them; a message whose number was read already is passed by.

Each topic is read again at most :data:`MAX_REREADS` times in one sync; then
it stops short with :class:`TopicStalled`, its cursor where it was, and the
next sync tries again.  A failure read again in the part of the topic read
before (``settled_until``) was settled then and is passed by.
"""

from __future__ import annotations

import hashlib
import json
import logging

import attrs

from core import contract
from core.errors import PermanentError, StatementFailed
from protocols.libraries import mls
from protocols.libraries.mls.group.state import DEFAULT_MAX_PAST_EPOCHS
from protocols.xmtp import numbering
from protocols.xmtp.errors import EpochAhead, GroupNeedsRejoin, TopicStalled
from protocols.xmtp.intent_machine import IntentBook
from protocols.xmtp.kinds import IntentState
from protocols.xmtp.numbering import Place, SequenceGap
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.interface import COMMIT, ServerMessage

log = logging.getLogger("tessera.xmtp.sync")

#: Readings of one topic again in one sync, at most (each is one fetch at least).
MAX_REREADS = 8
#: Syncs that read a topic again for the same stepped-over messages, at most.
MAX_SKIP_REREADS = 10
#: Epoch starts kept per group: the epochs whose messages we may still read, and a few more.
KEPT_EPOCH_STARTS = DEFAULT_MAX_PAST_EPOCHS + 3

_TOPIC = "SELECT cursor, sequence, epoch_starts, skip_check FROM xmtp_topic_refresh_state WHERE topic = ?"
_SET_PLACE = "UPDATE xmtp_topic_refresh_state SET cursor = ?, sequence = ? WHERE topic = ?"
_SET_EPOCH_STARTS = "UPDATE xmtp_topic_refresh_state SET epoch_starts = ? WHERE topic = ?"
_SET_SKIP_CHECK = "UPDATE xmtp_topic_refresh_state SET skip_check = ? WHERE topic = ?"


def position(cursor: str) -> tuple[int, str]:
    """Where ``cursor`` (``<timestamp>.<id>``) stands in server order ('' before everything)."""
    if not cursor:
        return (-1, "")
    timestamp, _, message_id = cursor.partition(".")
    return (int(timestamp) if timestamp.isdigit() else -1, message_id)


class Suspect(Exception):
    """A payload failed on its first reading: the page stops before it and the topic is read again."""

    def __init__(self, message: ServerMessage, failure: BaseException):
        super().__init__(f"{failure}")
        self.message = message
        self.failure = failure

    @property
    def key(self) -> tuple[str, bytes]:
        """The payload as the server handed it out: its id and its bytes."""
        return self.message.id, hashlib.sha256(self.message.payload).digest()

    @property
    def gap(self) -> EpochAhead | None:
        return self.failure if isinstance(self.failure, EpochAhead) else None

    @property
    def skipped(self) -> SequenceGap | None:
        return self.failure if isinstance(self.failure, SequenceGap) else None


@attrs.define
class Reading:
    """How one reading of a topic treats a payload that fails (see the module docs).

    Attributes:
        confirmed: payloads (id, digest) the server handed out twice alike: refused for good when they fail.
        settled_until: the position up to which the topic was read before this reading.
        passed_gaps: jumps in the server's numbers (from, to) it handed out twice alike: passed over
            (:mod:`.numbering`).
    """

    confirmed: set[tuple[str, bytes]] = attrs.Factory(set)
    settled_until: tuple[int, str] | None = None
    passed_gaps: set[tuple[int, int]] = attrs.Factory(set)

    def disposes(self, message: ServerMessage, failure: BaseException) -> bool:
        """Whether the pipeline disposes of a failed ``message`` its usual way (park or retry: True) or it is
        passed by as settled before (False); raises :class:`Suspect` when the topic must be read again."""
        if not isinstance(failure, PermanentError) or isinstance(failure, StatementFailed):
            return True  # not the payload's fault: a retry, or a plugin bug parked with SQLite's message
        if Suspect(message, failure).key in self.confirmed:
            return True
        if self.settled_until is not None and position(message.cursor) <= self.settled_until:
            return False
        raise Suspect(message, failure)


# --- the topic's bookkeeping (inside the caller's transaction) -----------------------------------------


def _row(db: contract.Database, topic: str) -> tuple[Place, dict[int, Place], str]:
    """The topic's place now, where each epoch we may read again started, and its skip check."""
    found = db.one(_TOPIC, (topic,))
    if found is None:
        return Place(), {}, ""
    return Place(str(found[0]), found[1]), _starts(str(found[2])), str(found[3])


def _starts(text: str) -> dict[int, Place]:
    starts = {}
    for epoch, value in (json.loads(text) if text else {}).items():
        cursor, sequence = (value, None) if isinstance(value, str) else value  # a bare cursor: kept before 003
        starts[int(epoch)] = Place(str(cursor), sequence)
    return starts


def _save_starts(db: contract.Database, topic: str, starts: dict[int, Place]) -> None:
    value = {str(epoch): [place.cursor, place.sequence] for epoch, place in sorted(starts.items())}
    db.execute(_SET_EPOCH_STARTS, (json.dumps(value), topic))


def record_epoch_start(db: contract.Database, topic: str, epoch: int, opened_at: Place) -> None:
    """Epoch ``epoch`` was opened by the commit at ``opened_at`` (in the transaction that applied it)."""
    _, starts, _ = _row(db, topic)
    starts[epoch] = opened_at
    _save_starts(db, topic, dict(sorted(starts.items())[-KEPT_EPOCH_STARTS:]))


def _forget_epoch_start(db: contract.Database, topic: str, epoch: int) -> None:
    _, starts, _ = _row(db, topic)
    if starts.pop(epoch, None) is not None:
        _save_starts(db, topic, starts)


class Recovery:
    """One sync of one topic: where to read it again from, or why not (see the module docs)."""

    def __init__(self, runtime: contract.Runtime, topic: str):
        self.runtime = runtime
        self.topic = topic
        self.group_id = bytes.fromhex(topic[2:]) if topic.startswith("g/") else None
        self.reading = Reading()
        self.rereads = 0
        self._seen: set[tuple[str, bytes]] = set()
        self._from_epoch_start = False
        self._unknown: set[str] = set()
        self._refused_commit = ""
        self._skips_read_again = False

    def _read(self) -> tuple[Place, dict[int, Place], str]:
        with self.runtime.db.read():
            return _row(self.runtime.db, self.topic)

    def _restart(self, place: Place) -> str:
        """Read the topic again from ``place``: the cursor and its number go back there (in their own
        transaction: a crash then reads again from there too); the cursor to read from."""
        with self.runtime.db.write():
            self.runtime.db.execute(_SET_PLACE, (place.cursor, place.sequence, self.topic))
        return place.cursor

    def _count(self, why: str) -> None:
        self.rereads += 1
        if self.rereads > MAX_REREADS:
            raise TopicStalled(
                f"{self.topic}: read again {MAX_REREADS} times in one sync and the server's answers still do not "
                f"fit ({why}); the next sync tries again"
            )

    def _held_epoch(self) -> int | None:
        if self.group_id is None:
            return None
        with self.runtime.db.read():
            vault = Vault.of_runtime(self.runtime)
            return vault.group(self.group_id).epoch if vault.has_group(self.group_id) else None

    def after_suspect(self, suspect: Suspect) -> str:
        """Where to read the topic again from after ``suspect`` failed; :class:`GroupNeedsRejoin` when the
        commit it needs is not on the server."""
        here, starts, _ = self._read()
        self._count(str(suspect.failure))
        if suspect.key not in self._seen:
            self._seen.add(suspect.key)
            log.info("%s: %s; reading it again from the server", self.topic, suspect.failure)
            return here.cursor
        skipped = suspect.skipped
        if skipped is not None:
            self.reading.passed_gaps.add(skipped.jump)
            with self.runtime.db.write():
                kept = numbering.keep_gap(self.runtime.db, self.topic, here, skipped.jump)
            log.warning(
                "%s: the server again did not hand out number(s) %s of the group; going on without them, and "
                "reading for them again in the next %d syncs",
                self.topic,
                kept,
                MAX_SKIP_REREADS,
            )
            return here.cursor
        gap = suspect.gap
        if gap is None:
            self.reading.confirmed.add(suspect.key)
            if suspect.message.message_type == COMMIT:
                self._refused_commit = f"commit {suspect.message.id} does not apply: {suspect.failure}"
            log.warning(
                "%s: the server hands out the same bytes again; refused for good: %s", self.topic, suspect.failure
            )
            return here.cursor
        if not self._from_epoch_start:
            self._from_epoch_start = True
            self.reading.settled_until = position(here.cursor)
            log.warning(
                "%s: %s; reading the topic again from the commit that opened epoch %d",
                self.topic,
                gap,
                gap.held_epoch,
            )
            return self._restart(starts.get(gap.held_epoch, Place()))
        refused = f" ({self._refused_commit})" if self._refused_commit else ""
        raise GroupNeedsRejoin(
            f"the commit that opens epoch {gap.held_epoch + 1} is not on the server{refused}: "
            f"{suspect.message.id} is for epoch {gap.message_epoch} and we hold epoch {gap.held_epoch}; "
            "this installation must be removed from the group and added again (docs/xmtp.md, Forks and rejoin)"
        )

    def after_unknown_cursor(self) -> str:
        """Where to start again after the server answered ``unknown_cursor`` to the topic's cursor."""
        here, starts, _ = self._read()
        failing = here.cursor
        self._count(f"unknown_cursor for {failing}")
        self._unknown.add(failing)
        held = self._held_epoch()
        start = starts.get(held, Place()) if held is not None else Place()
        if start.cursor and start.cursor not in self._unknown:
            restart, where = start, f"the commit that opened epoch {held}"
        elif "" not in self._unknown:
            restart, where = Place(), "the oldest message the server holds"
        else:
            raise TopicStalled(f"{self.topic}: the server answers unknown_cursor even without a cursor")
        log.warning(
            "%s: the server answered unknown_cursor for %s (a cursor it never gave, or whose message expired); "
            "reading the topic again from %s",
            self.topic,
            failing or "(none)",
            where,
        )
        with self.runtime.db.write():
            self.runtime.db.execute(_SET_PLACE, (restart.cursor, restart.sequence, self.topic))
            if held is not None and not restart.cursor:
                _forget_epoch_start(self.runtime.db, self.topic, held)
        return restart.cursor

    def after_drain(self) -> str | None:
        """Where to read the topic again from for messages stepped over, or None: the reading is done."""
        if self.group_id is None or self._skips_read_again:
            return None
        here, starts, check = self._read()
        missing = self._missing(position(here.cursor)[1], starts)
        if missing is None:
            return None
        if not missing:
            if check:
                self._save_skip_check("")
            return None
        digest = hashlib.sha256(json.dumps(sorted(missing)).encode()).hexdigest()[:16]
        seen, _, count = check.partition(":")
        times = int(count) if seen == digest and count.isdigit() else 0
        if times >= MAX_SKIP_REREADS:
            return None
        self._save_skip_check(f"{digest}:{times + 1}")
        self._skips_read_again = True
        self.reading.settled_until = position(here.cursor)
        since = min(missing.values(), key=lambda place: position(place.cursor))
        log.info(
            "%s: %d messages were stepped over or not handed out (%s); reading the topic again from %s",
            self.topic,
            len(missing),
            ", ".join(sorted(missing)),
            since.cursor or "the start",
        )
        return self._restart(since)

    def _missing(self, passed_id: str, starts: dict[int, Place]) -> dict[str, Place] | None:
        """Each message we know the topic holds before its cursor and we have not read, and where to read
        again from for it: generations a sender stepped over and messages of ours the server took that we
        never read back (their ids are before the cursor's: the server's ids grow in server order), from the
        start of their epoch; numbers the server did not hand out, from just before them.  None: no group
        state."""
        assert self.group_id is not None
        with self.runtime.db.read():
            vault = Vault.of_runtime(self.runtime)
            if not vault.has_group(self.group_id):
                return None
            skipped = mls.skipped_generations(vault.group(self.group_id))
            ours = [
                intent
                for intent in IntentBook(self.runtime.db).open_in(self.group_id)
                if intent.state is IntentState.PUBLISHED and intent.server_id and intent.server_id < passed_id
            ]
            gaps = numbering.kept_gaps(self.runtime.db, self.topic)
        missing = {f"{leaf}/{generation}": starts.get(epoch, Place()) for epoch, leaf, generation in skipped}
        missing.update({intent.id: starts.get(intent.epoch or 0, Place()) for intent in ours})
        missing.update({f"number {gap}": gap.since for gap in gaps})
        return missing

    def _save_skip_check(self, value: str) -> None:
        with self.runtime.db.write():
            self.runtime.db.execute(_SET_SKIP_CHECK, (value, self.topic))
