"""A backfill's events verified and opened on every core, before the one writer applies them.

Per event, a backfill pays the BIP-340 verification of its Nostr signature and the outer AEAD twice: once to
sort the batch (its rounds need to know which events the current keys open, and which of those are commits)
and once more as each event goes through the pipeline.  Neither needs the database.  So, for a batch of at
least :data:`LEAST_FOR_WORKERS` events, worker processes (``backfill_workers``, one per core by default) do
both for the whole batch at its start — the outer layer with the keys of every epoch the group's state and
its losing branches retain then — and the writer finds their answers instead of doing the work:

* a verified signature, as ``(id, pubkey, sig)`` (:data:`~protocols.marmot.wire.nostr.VERIFIED_AHEAD`): the
  writer still recomputes the id from the content, so an event altered after the check is no verified one;
* an opened envelope, as its MLS bytes with the epoch and the key that opened it
  (:data:`~protocols.marmot.wire.outer.OPENED_AHEAD`): the writer takes them only where the state it holds
  at that point retains that very key for that epoch.

An event a worker could not verify or open is simply not in the answers: the writer meets it as before and
records the same outcome with the same reason.  The answers stay in the writer's memory for the backfill
only (:func:`answers_installed` empties them, whatever happens); the MLS bytes they hold are still
encrypted to the group's ratchet.  The workers are started once per process and kept for the next backfill.
"""

from __future__ import annotations

import atexit
import multiprocessing
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

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
    opened: tuple[int, bytes, bytes] | None  # (epoch, key, MLS message)


def prepare(lines: Sequence[bytes], keys: Sequence[EpochKey]) -> list[Answer | None]:
    """Verify and open each line (None for one that does not parse, verify or name a group); runs in a worker."""
    found: list[Answer | None] = []
    for line in lines:
        try:
            event = nostr.parse_event(line)
            nostr.verify_event(event)
            nostr.group_id_of(event)
        except InvalidEvent:
            found.append(None)
            continue
        found.append(Answer(event["id"], event["pubkey"], event["sig"], event["content"], _open(event, keys)))
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

    def prepare(self, lines: Sequence[bytes], keys: Sequence[EpochKey], workers: int) -> list[Answer | None]:
        """:func:`prepare` over ``lines`` spread over ``workers`` processes, answers in the lines' order."""
        pool = self._started(workers)
        chunk = max(1, -(-len(lines) // (workers * _CHUNKS_PER_WORKER)))
        chunks = [lines[start : start + chunk] for start in range(0, len(lines), chunk)]
        answers: list[Answer | None] = []
        for part in pool.map(prepare, chunks, [list(keys)] * len(chunks)):
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


def answers(lines: Sequence[bytes], keys: Sequence[EpochKey], workers: int) -> list[Answer | None]:
    """The answers for ``lines``: from ``workers`` processes, or none at all (an empty list) when the batch
    is too small or ``workers`` is 0, and the writer does the work itself."""
    if workers <= 0 or len(lines) < LEAST_FOR_WORKERS:
        return []
    return WORKERS.prepare(lines, keys, workers)


@contextmanager
def answers_installed(found: Sequence[Answer | None]) -> Iterator[None]:
    """``found`` where verify_event and open_content look, for the duration of the block."""
    for answer in found:
        if answer is None:
            continue
        nostr.VERIFIED_AHEAD.add((answer.id, answer.pubkey, answer.sig))
        if answer.opened is not None:
            outer.OPENED_AHEAD[answer.content] = answer.opened
    try:
        yield
    finally:
        nostr.VERIFIED_AHEAD.clear()
        outer.OPENED_AHEAD.clear()
