"""The store's threads: one writer for commands, a few readers for history and pending deliveries.

An apsw connection must never be used by two threads at once, so each
worker thread opens its own :class:`~core.app.App` (and its own
:class:`~protocols.sovereign.service.Store` on it) and is the only one to
touch it; the event loop hands work over through a queue and gets the result
back as an asyncio future.  One writer keeps commands in arrival order (which
is server order) without contending for SQLite's write lock; when writes wait
in its queue it commits them together (group commit: each in its own
savepoint, one COMMIT for all, every reply after that COMMIT); readers run in
WAL snapshots beside it.

A command's ``on_done`` callback runs on the event loop *before* the future
is resolved and in commit order, which is what lets the server push a stored
message to its recipients in server order.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import attrs

from core.app import App
from protocols.sovereign.service import Store

log = logging.getLogger("tessera.sovereign.server")

T = TypeVar("T")

#: At most this many results wait in a worker before the loop is woken for them ...
RESULT_BATCH = 32
#: ... or this long after the first of them was ready.
RESULT_DELAY_S = 0.002

#: The writer commits at most this many waiting writes together (one COMMIT; each in its own savepoint).
GROUP_COMMIT = 64

#: Opens the App a worker thread uses (called in that thread) and the Store on it.
StoreOpener = Callable[[], tuple[App, Store]]
#: Called from a worker thread after each operation: (operation name, seconds it took, whether it raised).
LatencyObserver = Callable[[str, float, bool], None]


@attrs.define
class _Job(Generic[T]):
    operation: str
    work: Callable[[Store], T]
    future: asyncio.Future[T]
    on_done: Callable[[T], None] | None = None


class _Worker:
    """One thread, one App, one queue of jobs (shared with the other readers for the read pool)."""

    def __init__(self, name: str, jobs: queue.SimpleQueue[_Job[Any] | None], pool: StorePool, *, group_commit: int = 1):
        self.jobs = jobs
        self.group_commit = group_commit
        self.pool = pool
        self.opened = threading.Event()
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        try:
            app, store = self.pool.open_store()
        except BaseException as exc:  # reported by StorePool.start in the starting thread
            self.failure = exc
            self.opened.set()
            return
        self.opened.set()
        try:
            self._serve(store)
        finally:
            app.close()

    def _serve(self, store: Store) -> None:
        """Do jobs until the stop marker; hand results to the loop in batches while more jobs wait.

        Each hand-over wakes the event loop, and the loop and this thread share
        the GIL: under load, waking it once per :data:`RESULT_BATCH` jobs (or
        :data:`RESULT_DELAY_S`) leaves both more time for work.
        """
        done: list[_Outcome] = []
        first_done_at = 0.0
        while True:
            if done and (
                self.jobs.empty() or len(done) >= RESULT_BATCH or time.perf_counter() - first_done_at >= RESULT_DELAY_S
            ):
                self.pool.loop.call_soon_threadsafe(_settle_all, done)
                done = []
            job = self.jobs.get()
            if job is None:
                break
            if not done:
                first_done_at = time.perf_counter()
            group, stopping = self._waiting_after(job)
            done.extend(self._do_group(group, store))
            if stopping:
                break
        if done:
            self.pool.loop.call_soon_threadsafe(_settle_all, done)

    def _waiting_after(self, job: _Job[Any]) -> tuple[list[_Job[Any]], bool]:
        """``job`` and, on the writer, the jobs already waiting behind it (at most GROUP_COMMIT in all)."""
        group = [job]
        while len(group) < self.group_commit and not self.jobs.empty():
            waiting = self.jobs.get_nowait()
            if waiting is None:
                return group, True
            group.append(waiting)
        return group, False

    def _do_group(self, group: list[_Job[Any]], store: Store) -> list[_Outcome]:
        """Do ``group`` in one transaction (each job in its own savepoint: a refused one undoes only itself).

        Every job's outcome waits for the group's commit, so no reply or push
        ever tells of a write that a failed commit then lost.
        """
        if len(group) == 1:
            return [self._do(group[0], store)]
        try:
            with store.app.db.write():
                return [self._do(job, store) for job in group]
        except Exception as exc:  # the commit itself failed: none of the group is stored
            log.error("a group of %d writes failed to commit: %s", len(group), exc)
            return [_Outcome(job, None, exc) for job in group]

    def _do(self, job: _Job[Any], store: Store) -> _Outcome:
        started = time.perf_counter()
        try:
            outcome = _Outcome(job, job.work(store), None)
        except Exception as exc:
            outcome = _Outcome(job, None, exc)
        self.pool.observe(job.operation, time.perf_counter() - started, outcome.failure is not None)
        return outcome


@attrs.frozen
class _Outcome:
    job: _Job[Any]
    result: Any
    failure: Exception | None


def _settle_all(outcomes: list[_Outcome]) -> None:
    """On the loop, in the order the jobs were done: follow-ups first, then each future."""
    for outcome in outcomes:
        job = outcome.job
        if outcome.failure is not None:
            if not job.future.done():
                job.future.set_exception(outcome.failure)
            continue
        if job.on_done is not None:
            try:
                job.on_done(outcome.result)
            except Exception:  # a push that failed must not lose the requester its reply
                log.exception("after %s: the follow-up failed", job.operation)
        if not job.future.done():
            job.future.set_result(outcome.result)


class StorePool:
    """The writer thread and ``readers`` reader threads; create it on the event loop, then :meth:`start`."""

    def __init__(self, open_store: StoreOpener, *, readers: int = 2, observe: LatencyObserver | None = None):
        if readers < 1:
            raise ValueError("the pool needs at least one reader thread")
        self.open_store = open_store
        self.observe: LatencyObserver = observe or (lambda operation, seconds, failed: None)
        self.loop = asyncio.get_running_loop()
        self._write_jobs: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        self._read_jobs: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        self._writer = _Worker("sovereign-writer", self._write_jobs, self, group_commit=GROUP_COMMIT)
        self._readers = [_Worker(f"sovereign-reader-{n}", self._read_jobs, self) for n in range(readers)]
        self._started = False

    def start(self) -> None:
        """Open every thread's database (one after another: opening writes); raise what an opening raised."""
        for worker in (self._writer, *self._readers):
            worker.thread.start()
            worker.opened.wait()
            if worker.failure is not None:
                self.stop()
                raise worker.failure
        self._started = True

    def write(
        self, operation: str, work: Callable[[Store], T], on_done: Callable[[T], None] | None = None
    ) -> asyncio.Future[T]:
        """Run ``work`` on the writer thread, after every write submitted before it."""
        return self._submit(self._write_jobs, _Job(operation, work, self.loop.create_future(), on_done))

    def read(self, operation: str, work: Callable[[Store], T]) -> asyncio.Future[T]:
        """Run ``work`` on whichever reader thread is free."""
        return self._submit(self._read_jobs, _Job(operation, work, self.loop.create_future()))

    def _submit(self, jobs: queue.SimpleQueue[_Job[Any] | None], job: _Job[T]) -> asyncio.Future[T]:
        if not self._started:
            raise RuntimeError("the store pool is not running")
        jobs.put(job)
        return job.future

    def stop(self) -> None:
        """Let every thread finish the jobs it was given, close its database, and end (blocks)."""
        self._started = False
        self._write_jobs.put(None)
        for _ in self._readers:
            self._read_jobs.put(None)
        for worker in (self._writer, *self._readers):
            if worker.thread.is_alive():
                worker.thread.join()
