"""What the plugin knows about a group besides its engine state: the commits of each epoch in the rollback window.

:class:`GroupMeta` is what the plugin needs besides the engine state to
decide about commits.  For each epoch of the rollback window it keeps an
:class:`EpochRecord`: every valid commit seen for that epoch (its SHA-256
and the best ``(created_at, id)`` among the outer events that carried it)
and which of them is applied.  Seed 001's race rule picks the candidate with
the smallest cursor, so the decision depends on the set of wrappers seen,
never on the order they arrived in.  Every candidate that is not applied has
a *branch*: the engine state its commit leads to, kept so that the events
of that branch are recorded ``EpochInvalidated`` rather than waiting for an
epoch that will never come.  The rollback *generation* keeps fact ids
distinct when an outer event is legitimately processed again after a
rollback.  Stored sealed, as JSON, under ``meta/<gid>`` (:mod:`.store`).
"""

from __future__ import annotations

import json

import attrs

from protocols.marmot.cursor import Cursor, compare


@attrs.frozen
class Candidate:
    """One commit seen for an epoch: its MLS bytes' SHA-256, best wrapper and every wrapper."""

    digest: str
    cursor: Cursor
    wrappers: tuple[str, ...] = ()

    def seen_in(self, cursor: Cursor) -> Candidate:
        """This candidate after one more outer event carrying it."""
        best = cursor if compare(cursor, self.cursor) < 0 else self.cursor
        wrappers = self.wrappers if cursor.id in self.wrappers else (*self.wrappers, cursor.id)
        return attrs.evolve(self, cursor=best, wrappers=wrappers)


@attrs.frozen
class EpochRecord:
    """The commits seen for one epoch and the one the group applied."""

    epoch: int
    applied: str
    candidates: tuple[Candidate, ...]

    def candidate(self, digest: str) -> Candidate | None:
        return next((c for c in self.candidates if c.digest == digest), None)

    @property
    def winner(self) -> Candidate:
        """The candidate the race rule picks: the smallest best-wrapper cursor."""
        return min(self.candidates, key=lambda c: c.cursor.key())

    @property
    def applied_candidate(self) -> Candidate:
        return next(c for c in self.candidates if c.digest == self.applied)

    def seen(self, digest: str, cursor: Cursor) -> EpochRecord:
        """The record after an outer event ``cursor`` carried the commit ``digest``."""
        known = self.candidate(digest)
        updated = known.seen_in(cursor) if known is not None else Candidate(digest, cursor, (cursor.id,))
        others = tuple(c for c in self.candidates if c.digest != digest)
        return attrs.evolve(self, candidates=tuple(sorted((*others, updated), key=lambda c: c.digest)))

    def losers(self) -> list[Candidate]:
        return [c for c in self.candidates if c.digest != self.applied]


@attrs.frozen
class GroupMeta:
    """Plugin metadata of one group (stored sealed as JSON under ``meta/<gid>``)."""

    gid: str
    joined_epoch: int
    generation: int = 0
    records: tuple[EpochRecord, ...] = ()

    def record(self, epoch: int) -> EpochRecord | None:
        return next((r for r in self.records if r.epoch == epoch), None)

    @property
    def window_start(self) -> int | None:
        """The oldest epoch a better commit can still change, or None before the first commit."""
        return self.records[0].epoch if self.records else None

    def needs_keeping(self, epoch: int | None) -> bool:
        """True when a rollback could still make an event decided at ``epoch`` read differently."""
        start = self.window_start
        return epoch is not None and start is not None and epoch > start

    def branches(self) -> list[tuple[int, str]]:
        """``(epoch, digest)`` of every losing candidate in the window, newest epoch first."""
        return [(r.epoch, c.digest) for r in reversed(self.records) for c in r.losers()]

    def with_applied(self, record: EpochRecord, keep: int) -> tuple[GroupMeta, list[EpochRecord]]:
        """Meta after a commit of the newest epoch was applied; also the records that left the window."""
        records = (*tuple(r for r in self.records if r.epoch < record.epoch), record)
        dropped = list(records[:-keep])
        return attrs.evolve(self, records=records[-keep:]), dropped

    def with_record(self, record: EpochRecord) -> GroupMeta:
        return attrs.evolve(self, records=tuple(record if r.epoch == record.epoch else r for r in self.records))

    def rolled_back(self, record: EpochRecord) -> tuple[GroupMeta, list[EpochRecord]]:
        """Meta after ``record`` changed the commit of its epoch; also the records of the dead branch."""
        dropped = [r for r in self.records if r.epoch > record.epoch]
        records = (*tuple(r for r in self.records if r.epoch < record.epoch), record)
        return attrs.evolve(self, records=records, generation=self.generation + 1), dropped

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "version": 2,
                "gid": self.gid,
                "joined_epoch": self.joined_epoch,
                "generation": self.generation,
                "records": [
                    [
                        r.epoch,
                        r.applied,
                        [[c.digest, c.cursor.created_at, c.cursor.id, list(c.wrappers)] for c in r.candidates],
                    ]
                    for r in self.records
                ],
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> GroupMeta:
        raw = json.loads(data)
        if raw.get("version") != 2:  # the first layout: one applied commit per epoch, no branches
            snapshots = set(raw["snapshots"])
            records = tuple(
                EpochRecord(e, d, (Candidate(d, Cursor(t, i), (i,)),))
                for e, t, i, d in raw["commits"]
                if e in snapshots
            )
            return cls(raw["gid"], raw["joined_epoch"], raw["generation"], records)
        records = tuple(
            EpochRecord(e, applied, tuple(Candidate(d, Cursor(t, i), tuple(w)) for d, t, i, w in cands))
            for e, applied, cands in raw["records"]
        )
        return cls(raw["gid"], raw["joined_epoch"], raw["generation"], records)
