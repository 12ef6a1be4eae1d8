"""The server's numbers of a group's messages: what a page left out shows as a number skipped.

``tessera serve`` numbers each group's messages 1, 2, 3... in server order
and never skips one (docs/server-protocol.md).  A group topic remembers the
number of the message at its cursor, and each message read must be the next
one:

* a number at or below it is a message read before (a copy, or an old one
  handed out again under another id): passed by, the cursor stays;
* a number further on means messages were left out: :class:`SequenceGap`
  stops the page before it, and the topic is read again from its cursor
  (:mod:`.rereading`).  When the server hands out the same jump again it holds
  no such messages now; the numbers missing are then kept as a :class:`Gap`,
  passed over, and read for again in later syncs, until they come or the
  syncs allowed for it are spent.

A message without a number (a server that gives none, or one stored before
the server numbered them) makes the next one unchecked.  Welcome topics are
not numbered (a welcome carries its group's number, not ours).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import attrs

from core import contract
from protocols.xmtp.transport.interface import ServerMessage

#: Gaps a topic keeps, at most (the oldest go first): each is read for again in later syncs.
MAX_GAPS = 32

_NUMBERS = "SELECT sequence, gaps FROM xmtp_topic_refresh_state WHERE topic = ?"
_TOPICS = "xmtp_topic_refresh_state"
_SET_GAPS = "UPDATE xmtp_topic_refresh_state SET gaps = ? WHERE topic = ?"


@attrs.frozen
class Place:
    """Where a topic may be read from: a cursor ('' before everything) and the server's number of the
    message at it (None: not known)."""

    cursor: str = ""
    sequence: int | None = None


@attrs.frozen
class Gap:
    """Numbers ``first`` to ``last`` of a group that the server did not hand out; ``since`` is the message
    just before them, to read the topic again from."""

    since: Place
    first: int
    last: int

    def to_json(self) -> list[Any]:
        return [self.since.cursor, self.first, self.last]

    @classmethod
    def from_json(cls, value: list[Any]) -> Gap:
        cursor, first, last = value
        return cls(Place(str(cursor), int(first) - 1), int(first), int(last))

    def __str__(self) -> str:
        return f"{self.first}" if self.first == self.last else f"{self.first} to {self.last}"


class SequenceGap(Exception):
    """A message whose number is further on than the next one: the messages between were left out."""

    def __init__(self, message: ServerMessage, after: int):
        self.after = after
        self.number = message.sequence or 0
        missing = Gap(Place(), after + 1, self.number - 1)
        super().__init__(
            f"{message.id} is number {self.number} of its group and we read up to {after}: number(s) {missing} not handed out"
        )

    @property
    def jump(self) -> tuple[int, int]:
        return self.after, self.number


def gaps_of(text: str) -> list[Gap]:
    return [Gap.from_json(value) for value in json.loads(text)] if text else []


def _save(db: contract.Database, topic: str, gaps: list[Gap]) -> None:
    db.execute(_SET_GAPS, (json.dumps([gap.to_json() for gap in gaps[-MAX_GAPS:]]) if gaps else "", topic))


def taken(db: contract.Database, topic: str, message: ServerMessage, passed: set[tuple[int, int]]) -> bool:
    """Whether ``message`` is the next of ``topic`` to take (False: read before, pass it by), in the caller's
    write transaction; :class:`SequenceGap` when numbers before it were left out, unless the jump is one
    already ``passed`` in this sync or a gap kept from before.  Taking a number a gap was missing fills it."""
    number = message.sequence
    if number is None or not topic.startswith("g/"):
        return True
    found = db.kept(_TOPICS, ("numbers", topic), partial(db.one, _NUMBERS, (topic,)))
    if found is None or found[0] is None:
        return True
    last = int(found[0])
    if number <= last:
        return False
    gaps = gaps_of(str(found[1]))
    kept = any(gap.first == last + 1 and gap.last == number - 1 for gap in gaps)
    if number > last + 1 and (last, number) not in passed and not kept:
        raise SequenceGap(message, last)
    if any(gap.first <= number <= gap.last for gap in gaps):
        _save(db, topic, _fill(gaps, number, Place(message.cursor, number)))
    return True


def moved(db: contract.Database, topic: str, row: tuple[Any, ...] | None) -> None:
    """The cursor of ``topic`` moved, and ``row`` is its ``(sequence, gaps)`` as the move left them (the
    move's ``RETURNING``): the next payload's :func:`taken` starts from it without reading the row again."""
    db.note(_TOPICS, ("numbers", topic), row)


def advanced(db: contract.Database, topic: str, number: int | None) -> None:
    """The cursor of ``topic`` moves past the message numbered ``number`` when the transaction commits (a move
    staged, not written yet): the next payload's :func:`taken` starts from ``number``, with the gaps as they
    stand (read again if a write of the table since made them forgotten: the row's gaps are current then, and
    only its number waits for the move)."""
    found = db.kept(_TOPICS, ("numbers", topic), partial(db.one, _NUMBERS, (topic,)))
    db.note(_TOPICS, ("numbers", topic), None if found is None else (number, found[1]))


def _fill(gaps: list[Gap], number: int, at: Place) -> list[Gap]:
    """``gaps`` with ``number`` (read at ``at``) no longer missing."""
    left: list[Gap] = []
    for gap in gaps:
        if not gap.first <= number <= gap.last:
            left.append(gap)
            continue
        if gap.first < number:
            left.append(Gap(gap.since, gap.first, number - 1))
        if number < gap.last:
            left.append(Gap(at, number + 1, gap.last))
    return left


def keep_gap(db: contract.Database, topic: str, since: Place, jump: tuple[int, int]) -> Gap:
    """Keep the numbers between ``jump``'s two as missing, to read for again from ``since``."""
    found = db.one(_NUMBERS, (topic,))
    gaps = gaps_of(str(found[1])) if found is not None else []
    gap = Gap(since, jump[0] + 1, jump[1] - 1)
    if gap not in gaps:
        gaps.append(gap)
        _save(db, topic, gaps)
    return gap


def kept_gaps(db: contract.Database, topic: str) -> list[Gap]:
    found = db.one(_NUMBERS, (topic,))
    return gaps_of(str(found[1])) if found is not None else []
