"""Marmot's prepare stage: relay events verified and opened on every core, before the one writer handles them.

Per event, the writer pays the BIP-340 verification of its Nostr signature and the outer AEAD (a
backfill needs both to sort its batch into rounds; it then hands the handler what it found, as the
workers' answer below, so the pipeline does neither again).  Neither needs the database.  So, for a batch of at least :data:`LEAST_FOR_WORKERS` events,
worker processes (``backfill_workers``, one per core by default) do both for the whole batch at its start
— the outer layer with the keys of every epoch each joined group's state and its losing branches retain
then — and each event carries their :class:`Answer` through the pipeline (``WorkItem.prepared``):

* its verified signature, as ``(id, pubkey, sig)``: the decoder (:func:`~protocols.marmot.processing.
  handlers.decode_prepared`) still recomputes the id from the content, so an event altered after the check
  is no verified one;
* its opened envelope, as its MLS bytes with the epoch and the key that opened it: the handler takes them
  only for this very content and where the state it holds at that point retains that very key for that
  epoch (:func:`~protocols.marmot.wire.outer.open_content`).

An event a worker could not verify or open has no answer (or one without an opened envelope): the writer
meets it as before and records the same outcome with the same reason.  Answers live on the items, so they
end with the batch and no two databases ever see each other's.  The stage itself (what the core calls,
with the database's keys) is :mod:`.prepare_stage`; this module is what the workers import.  The workers
are started once per process and kept for the next batch.
"""

from __future__ import annotations

import atexit
import multiprocessing
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor

import attrs

from protocols.marmot.errors import InvalidEvent
from protocols.marmot.wire import envelope, nostr, outer

#: A batch smaller than this is verified and opened by the writer: starting workers costs more.
LEAST_FOR_WORKERS = 500
_CHUNKS_PER_WORKER = 4

#: An epoch and its group-event key, as a worker gets them.
EpochKey = tuple[int, bytes]


@attrs.frozen
class Answer:
    """What a worker found for one line: its signature verified, and its envelope opened (or None)."""

    id: str
    pubkey: str
    sig: str
    content: str
    opened: outer.OpenedAhead | None  # (epoch, key, MLS message)

    @classmethod
    def of(cls, event: dict, opened: outer.OpenedAhead | None = None) -> Answer:
        """The answer for ``event``, whose signature was just verified (by a worker, or by the writer sorting
        its batch), and its envelope opened to ``opened`` if it was."""
        return cls(event["id"], event["pubkey"], event["sig"], event["content"], opened)

    @property
    def signature(self) -> nostr.Verified:
        return self.id, self.pubkey, self.sig

    def opened_for(self, content: str) -> outer.OpenedAhead | None:
        """The opened envelope, when it is of ``content`` exactly."""
        return self.opened if self.opened is not None and content == self.content else None


#: Each joined group's epoch keys by the ``h`` tags its events carry, as a worker gets them.
KeysByRoute = Mapping[str, Sequence[EpochKey]]


def prepare(lines: Sequence[bytes], keys: KeysByRoute) -> list[Answer | None]:
    """Verify and open each line (None for one that does not parse, verify or name a group); runs in a worker."""
    found: list[Answer | None] = []
    for line in lines:
        try:
            event = nostr.parse_event(line)
            nostr.verify_event(event)
            route = nostr.group_id_of(event)
        except InvalidEvent:
            found.append(None)
            continue
        found.append(Answer.of(event, _open(event, keys.get(route, ()))))
    return found


def _open(event: dict, keys: Sequence[EpochKey]) -> tuple[int, bytes, bytes] | None:
    try:
        raw = envelope.decode_content(event["content"])
    except envelope.InvalidEnvelope:
        return None
    for epoch, key in keys:
        message = envelope.open_raw(key, raw)
        if message is not None:
            return epoch, key, message
    return None


class Workers:
    """The backfill's worker processes, started on first use and kept for the process's next backfill."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._size = 0

    def prepare(self, lines: Sequence[bytes], keys: KeysByRoute, workers: int) -> list[Answer | None]:
        """:func:`prepare` over ``lines`` spread over ``workers`` processes, answers in the lines' order."""
        pool = self._started(workers)
        chunk = max(1, -(-len(lines) // (workers * _CHUNKS_PER_WORKER)))
        chunks = [lines[start : start + chunk] for start in range(0, len(lines), chunk)]
        answers: list[Answer | None] = []
        for part in pool.map(prepare, chunks, [dict(keys)] * len(chunks)):
            answers.extend(part)
        return answers

    def _started(self, workers: int) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None or self._size != workers:
                if self._pool is not None:
                    self._pool.shutdown(wait=True)
                # spawn: the writer may run network threads, which a forked child would inherit mid-call.
                context = multiprocessing.get_context("spawn")
                self._pool, self._size = ProcessPoolExecutor(workers, mp_context=context), workers
            return self._pool

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


WORKERS = Workers()
atexit.register(WORKERS.close)
