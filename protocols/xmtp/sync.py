"""Reading topics from the server (seed 002's sync): a lock per topic, one transaction per payload.

A topic is a group (``g/<hex>``: its messages in server order) or our
installation's welcomes (``w/<installation>``).  Syncing one:

1. in one transaction, take the topic's lock if it is free
   (``lock_until_ns`` in the past) and read its cursor;
2. fetch the payloads after the cursor (network, outside any transaction);
3. hand each to the core pipeline in its own transaction, which also moves
   the cursor past it, so a crash loses nothing and processes nothing twice
   (what was committed is behind the cursor; what was not is fetched again);
4. release the lock.

A lock outlives a crashed holder by :data:`LOCK_NS` at most, and less on a
cold start: each lock names its holder (host and process id), and a process
that starts syncing clears the locks of holders on this host that are gone
(:func:`clear_locks`).  Seed 002 clears every lock at start, having one
process per database; here the tick daemon, ``tessera xmtp sync`` and
``tessera xmtp listen`` may run side by side, so a live holder keeps its lock.  A welcome opens
its group's topic at the start of the group's history (what the others sent in our first epoch may be
stored before the welcome); what predates our epoch is passed by.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any

import attrs

from core import contract
from core.batch import MicroBatch
from core.errors import MalformedInput
from core.pipeline import Outcome
from core.queues import WorkItem
from core.records import Envelope, ItemSource
from protocols.libraries.delivery.codes import ErrorCode
from protocols.libraries.mls.ahead import Decrypted, OpenedPage
from protocols.xmtp import ahead, facts, items, numbering, queries, rereading
from protocols.xmtp.connection import XmtpMember
from protocols.xmtp.errors import GroupNeedsRejoin, ServiceRefused, ServiceUnavailable, TopicStalled
from protocols.xmtp.facts import PROTOCOL
from protocols.xmtp.numbering import Place, SequenceGap
from protocols.xmtp.rereading import Reading, Recovery, Suspect
from protocols.xmtp.transport.interface import WELCOME, DeliveryService, Page, ServerMessage

log = logging.getLogger("tessera.xmtp.sync")

LOCK_NS = 30_000_000_000  # a sync holds its topic at most this long without renewing
_HOST = socket.gethostname()


def holder() -> str:
    """How a lock names its holder: this host and process (a forked child is a holder of its own)."""
    return f"{_HOST}/{os.getpid()}"


#: Messages asked for a page: the most ``tessera serve`` hands out (docs/server-protocol.md, ``history``).  A
#: catch-up pays once a page for what a page costs whatever its length (its transaction and COMMIT, the group
#: state the helper hands back, restored and sealed again, the old state's key erased, a round trip).
PAGE = 200


@attrs.define
class SyncReport:
    """What one sync pass did."""

    processed: int = 0
    busy_topics: list[str] = attrs.Factory(list)
    failures: list[str] = attrs.Factory(list)
    #: Payloads recorded as the decrypting helper process opened them (:mod:`.ahead`).
    decrypted_ahead: int = 0
    #: Seconds the writer waited for the next page, and for the helper's work on it.
    waited_for_pages_s: float = 0.0
    waited_for_helper_s: float = 0.0
    #: Times a topic was read again (:mod:`.rereading`).
    reread: int = 0
    #: Groups we cannot follow any more, by group id (hex): why (also in ``failures``).
    needs_rejoin: dict[str, str] = attrs.Factory(dict)
    #: Topics not read because the server could not be reached (also in ``failures``).
    unreachable: list[str] = attrs.Factory(list)


def _now_ns(runtime: contract.Runtime) -> int:
    return int(runtime.clock.now_ms()) * 1_000_000


def take_lock(runtime: contract.Runtime, topic: str, holder_until_ns: int | None = None) -> str | None:
    """Take ``topic``'s lock when it is free; its cursor ('' at the start), or None when another sync holds it."""
    now = _now_ns(runtime)
    with runtime.db.write():
        runtime.db.execute("INSERT INTO xmtp_topic_refresh_state(topic) VALUES (?) ON CONFLICT DO NOTHING", (topic,))
        row = runtime.db.one("SELECT cursor, lock_until_ns FROM xmtp_topic_refresh_state WHERE topic = ?", (topic,))
        assert row is not None
        if row[1] > now:
            return None
        until = holder_until_ns if holder_until_ns is not None else now + LOCK_NS
        runtime.db.execute(
            "UPDATE xmtp_topic_refresh_state SET lock_until_ns = ?, lock_holder = ? WHERE topic = ?",
            (until, holder(), topic),
        )
        return str(row[0])


def extend_lock(runtime: contract.Runtime, topic: str) -> None:
    """Keep holding ``topic`` (a live subscription's heartbeat)."""
    with runtime.db.write():
        runtime.db.execute(
            "UPDATE xmtp_topic_refresh_state SET lock_until_ns = ? WHERE topic = ?", (_now_ns(runtime) + LOCK_NS, topic)
        )


def release_lock(runtime: contract.Runtime, topic: str) -> None:
    with runtime.db.write():
        runtime.db.execute("UPDATE xmtp_topic_refresh_state SET lock_until_ns = 0 WHERE topic = ?", (topic,))


def clear_locks(runtime: contract.Runtime) -> int:
    """Free the topics whose holder process on this host is gone (a cold start); how many were freed."""
    freed = 0
    with runtime.db.write():
        held = runtime.db.all("SELECT topic, lock_holder FROM xmtp_topic_refresh_state WHERE lock_until_ns != 0")
        for topic, holder in held:
            if holder_is_gone(holder):
                runtime.db.execute("UPDATE xmtp_topic_refresh_state SET lock_until_ns = 0 WHERE topic = ?", (topic,))
                freed += 1
    return freed


def holder_is_gone(named: str) -> bool:
    """Whether the process a lock names has ended (a holder on another host is left to its expiry)."""
    if not named:
        return True  # a lock that names no holder: nobody can be holding it
    host, _, pid = named.rpartition("/")
    if host != _HOST or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, someone else's
    return False


@contextmanager
def holding(runtime: contract.Runtime, topic: str) -> Iterator[str | None]:
    """The topic's cursor while we hold its lock (None: another sync holds it); released on the way out."""
    cursor = take_lock(runtime, topic)
    try:
        yield cursor
    finally:
        if cursor is not None:
            release_lock(runtime, topic)


def process(runtime: contract.Runtime, topic: str, message: ServerMessage) -> None:
    """One payload through the pipeline, and the topic's cursor past it, in one transaction.

    Raises :class:`~.rereading.Suspect` when it fails (nothing changes): the caller reads the topic from
    history instead, where it is checked again (:mod:`.rereading`)."""
    with runtime.db.write():
        process_in_transaction(runtime, topic, message)


def process_in_transaction(
    runtime: contract.Runtime,
    topic: str,
    message: ServerMessage,
    reading: Reading | None = None,
    prepared: Decrypted | None = None,
    *,
    whole: bool = False,
) -> Outcome | None:
    """:func:`process` inside the caller's write transaction (a micro-batch: see :func:`drain_topic`).

    The payload's handling runs in a savepoint with its cursor move.  A payload that fails is not passed
    by at once: unless ``reading`` says it was checked (:mod:`.rereading`), the savepoint rolls back and
    :class:`~.rereading.Suspect` is raised, so the cursor stays before it; once checked, the pipeline
    disposes of it with its reason and the cursor moves past it.  A message read before (by the server's
    numbers, :mod:`.numbering`) is passed by, the cursor where it is; one after numbers left out raises
    :class:`~.rereading.Suspect` too.  ``prepared``: what the decrypt-ahead helper made of the payload
    (:mod:`.ahead`), carried on its work item to the handler.  ``whole``: the payload has no savepoint of its
    own, and a failure raises :class:`core.pipeline.Unisolated` for the caller to roll its transaction back
    whole (a page the helper decrypted, which is then handled without it, payload by payload)."""
    reading = reading or Reading()
    try:
        if not numbering.taken(runtime.db, topic, message, reading.passed_gaps):
            return None
    except SequenceGap as gap:
        raise Suspect(message, gap) from None
    blob = items.encode(topic, message)
    try:
        decoded: Envelope | None = items.envelope(topic, message)
    except MalformedInput:
        decoded = None  # the pipeline parses the bytes itself and parks the item with the reason
    item = WorkItem(
        PROTOCOL, blob, ItemSource.BACKFILL, 0, partition_key=message.group_id.hex(), decoded=decoded, prepared=prepared
    )
    # A group's history holds the welcomes its members sent, too (the server stores each under its
    # group for its one recipient, and `history` returns every message of the group): the invitee
    # reads them on its welcome topic, so here they are passed by, not parked as malformed items.
    outcome = None
    if not (topic.startswith("g/") and message.message_type == WELCOME):
        outcome = runtime.door().attempt_whole(item) if whole else _handled(runtime, item, message, reading)
    _advance(runtime, topic, message, at_commit=whole)
    if outcome is not None and topic.startswith("g/"):
        for event in outcome.events:
            if event.type == facts.EPOCH_MOVED:
                opened_at = Place(message.cursor, message.sequence)
                rereading.record_epoch_start(runtime.db, topic, int(event.data["epoch"]), opened_at)
    if topic.startswith("w/"):
        # The group's own topic starts at the start of its history, not at the welcome: the welcome leaves
        # only once its commit is read back, and by then the others may have stored messages and commits
        # of our first epoch before it.  What predates our epoch is passed by (processing._application).
        runtime.db.execute(
            "INSERT INTO xmtp_topic_refresh_state(topic, cursor, last_message_timestamp_ns) VALUES (?, '', 0) "
            "ON CONFLICT DO NOTHING",
            (items.group_topic(message.group_id),),
        )
    return outcome


def _handled(runtime: contract.Runtime, item: WorkItem, message: ServerMessage, reading: Reading) -> Outcome | None:
    """The payload through the core's door, inside the caller's transaction, in a savepoint of its own; a
    failure rolls it back, and then either the pipeline disposes of it (parked with its reason, or retried),
    or it is passed by (None), or :class:`~.rereading.Suspect` is raised."""
    return runtime.door().attempt(item, partial(reading.disposes, message))


_MOVE = "UPDATE xmtp_topic_refresh_state SET cursor = ?, sequence = ?, last_message_timestamp_ns = ? WHERE topic = ?"
_CURSOR = "xmtp.cursor"  # what a page stages its cursor move under (Database.stage), with the topic


def _advance(runtime: contract.Runtime, topic: str, message: ServerMessage, *, at_commit: bool = False) -> None:
    """Move ``topic``'s cursor past ``message``, in the caller's transaction.

    ``at_commit``: the payload is one of a page that is rolled back whole when any of its payloads fails
    (``whole`` in :func:`process_in_transaction`), so only the last payload's move can ever be committed: the
    move is staged and written once, just before COMMIT, and the next payload's numbers are taken from the
    move as noted (:func:`.numbering.advanced`) instead of from a statement a payload."""
    number = message.sequence if topic.startswith("g/") else None  # welcomes carry their group's numbers
    place = (message.cursor, number, message.server_timestamp_us * 1000)
    if at_commit:
        numbering.advanced(runtime.db, topic, number)
        runtime.db.stage((_CURSOR, topic), place, partial(_move, runtime.db, topic))
        return
    moved = runtime.db.all(_MOVE + " RETURNING sequence, gaps", (*place, topic))
    numbering.moved(runtime.db, topic, moved[0] if moved else None)


def _move(db: contract.Database, topic: str, place: tuple[str, int | None, int]) -> None:
    db.execute(_MOVE, (*place, topic))


def sync_topic(
    runtime: contract.Runtime,
    topic: str,
    fetch: Any,
    report: SyncReport,
    acknowledge: Any = None,
    *,
    held: bool = False,
) -> None:
    """Fetch and process ``topic`` page after page while we hold its lock; ``acknowledge`` each page's ids.

    ``held``: the caller holds the lock already (a live subscription), so it is neither taken nor released."""
    if held:
        read_topic(runtime, topic, cursor_of(runtime, topic), fetch, report, acknowledge)
        return
    with holding(runtime, topic) as cursor:
        if cursor is None:
            report.busy_topics.append(topic)
            return
        read_topic(runtime, topic, cursor, fetch, report, acknowledge)


def read_topic(
    runtime: contract.Runtime, topic: str, cursor: str, fetch: Any, report: SyncReport, acknowledge: Any
) -> None:
    """:func:`drain_topic` from ``cursor``, and again from where :mod:`.rereading` says, until the topic is
    read: a payload failed on its first reading, the server did not know a cursor, or messages were stepped
    over.  Raises :class:`GroupNeedsRejoin` or :class:`TopicStalled` when it cannot be."""
    recovery = Recovery(runtime, topic)
    following: str | None = cursor
    while following is not None:
        try:
            drain_topic(runtime, topic, following, fetch, report, acknowledge, recovery.reading)
        except Suspect as suspect:
            following = recovery.after_suspect(suspect)
        except ServiceRefused as refused:
            if refused.code != ErrorCode.UNKNOWN_CURSOR:
                raise
            following = recovery.after_unknown_cursor()
        else:
            following = recovery.after_drain()
    report.reread += recovery.rereads


def drain_topic(
    runtime: contract.Runtime,
    topic: str,
    cursor: str,
    fetch: Any,
    report: SyncReport,
    acknowledge: Any,
    reading: Reading | None = None,
) -> None:
    """Everything after ``cursor`` through the pipeline, a page at a time (the caller holds the lock).

    A second thread asks for the next page while this one is processed, and tells the service what was
    processed once it is committed, so a catch-up waits on the network only when the service is slower
    than we are.  A group with more than a page waiting is decrypted a page ahead by a helper process
    (:mod:`.ahead`): the next page is fetched before this one is recorded, and handed to the helper; while
    the helper process starts, pages are handled here, as without it.  A payload that fails stops the drain before it (:class:`~.rereading.Suspect`, unless ``reading`` says
    it was checked), with what came before it committed."""
    reading = reading or Reading()
    page: Page = fetch(cursor or None, PAGE)
    reader = ahead.reader_for(runtime, topic, page)
    with ThreadPoolExecutor(1, thread_name_prefix="xmtp-read-ahead") as network:
        acks: list[Future[None]] = []
        following = _next_page(network, fetch, page)
        opened: Future[OpenedPage] | None = None  # the helper's work on ``page``, once it is helping
        try:
            while True:
                if reader is not None and opened is None and reader.ready():
                    # The helper is up (until then the pages were handled alone): from this page on it
                    # decrypts a page ahead, from the state committed so far.
                    reader.seed()
                    opened = reader.submit(page)
                upcoming: Page | None = None
                if reader is not None and opened is not None and following is not None:
                    began = time.perf_counter()
                    upcoming = following.result()  # asked for while the previous page was recorded
                    report.waited_for_pages_s += time.perf_counter() - began
                    upcoming_opened = reader.submit(upcoming)
                    following = _next_page(network, fetch, upcoming)
                if reader is None or opened is None:
                    _process_page(runtime, topic, page.messages, reading)
                elif reader.record(
                    topic,
                    page,
                    opened,
                    lambda message, decrypted: process_in_transaction(
                        runtime, topic, message, reading, decrypted, whole=True
                    ),
                    partial(_process_page, runtime, topic, reading=reading),
                ):
                    reader.seed()
                    if upcoming is not None:
                        upcoming_opened = reader.submit(upcoming)
                report.processed += len(page.messages)
                if acknowledge is not None and page.messages:
                    acks.append(network.submit(_acknowledge, acknowledge, [m.id for m in page.messages]))
                if upcoming is not None:
                    page, opened = upcoming, upcoming_opened
                elif following is not None:
                    began = time.perf_counter()
                    page, following = following.result(), None
                    report.waited_for_pages_s += time.perf_counter() - began
                    following = _next_page(network, fetch, page)
                else:
                    break
        finally:
            if reader is not None:
                reader.close()
                report.decrypted_ahead += reader.adopted
                report.waited_for_helper_s += reader.waited_s
        for ack in acks:
            ack.result()


def _next_page(network: ThreadPoolExecutor, fetch: Any, page: Page) -> Future[Page] | None:
    return network.submit(fetch, page.messages[-1].cursor, PAGE) if page.has_more and page.messages else None


def _process_page(runtime: contract.Runtime, topic: str, messages: Sequence[ServerMessage], reading: Reading) -> None:
    # A page's payloads share transactions (micro-batches: each payload in its own savepoint with its cursor
    # move, a commit every batch_items payloads or batch_ms): a crash redoes the uncommitted payloads whole,
    # and the page is committed before the server is told it was processed.  A payload that fails on its
    # first reading stops the page: what came before it is committed, then the Suspect goes up.
    with MicroBatch(runtime.db) as batch:
        for message in messages:
            suspect = batch.run(partial(_one, runtime, topic, message, reading), isolated=False)
            if suspect is not None:
                batch.commit()
                raise suspect


def _one(runtime: contract.Runtime, topic: str, message: ServerMessage, reading: Reading) -> Suspect | None:
    try:
        process_in_transaction(runtime, topic, message, reading)
    except Suspect as suspect:
        return suspect  # returned, not raised: raised through the batch, it would roll the whole batch back
    return None


def cursor_of(runtime: contract.Runtime, topic: str) -> str:
    """Where ``topic``'s sync stands ('' before its first message)."""
    return place_of(runtime, topic).cursor


def place_of(runtime: contract.Runtime, topic: str) -> Place:
    """Where ``topic``'s sync stands: its cursor and the server's number of the message there."""
    with runtime.db.read():
        found = runtime.db.one("SELECT cursor, sequence FROM xmtp_topic_refresh_state WHERE topic = ?", (topic,))
    return Place() if found is None else Place(str(found[0]), found[1])


def _acknowledge(acknowledge: Any, ids: list[str]) -> None:
    """Tell the service what is processed; best effort (unacknowledged deliveries only wait on the server)."""
    try:
        acknowledge(ids)
    except (ServiceUnavailable, ServiceRefused) as exc:
        log.info("acknowledging %d messages failed: %s", len(ids), exc)


def sync_all(runtime: contract.Runtime, service: DeliveryService, held: frozenset[str] = frozenset()) -> SyncReport:
    """Our welcomes, then every group we read; a topic another sync holds is skipped this time.

    ``held``: topics whose locks the caller holds (a live subscription's)."""
    report = SyncReport()
    welcomes = items.welcome_topic(runtime.service(XmtpMember).installation_id())
    _guarded(
        report,
        welcomes,
        lambda: sync_topic(
            runtime, welcomes, service.welcomes_after, report, service.acknowledge, held=welcomes in held
        ),
    )
    with runtime.db.read():
        groups = queries.synced_groups(runtime.db)
    for group in groups:
        topic = items.group_topic(group.id)
        _guarded(
            report,
            topic,
            lambda group_id=group.id, topic=topic: sync_group(runtime, service, group_id, report, held=topic in held),
        )
    return report


def sync_group(
    runtime: contract.Runtime, service: DeliveryService, group_id: bytes, report: SyncReport, *, held: bool = False
) -> None:
    """One group's new payloads (joining it on the service first: the welcome made us a member of it)."""
    service.join(group_id)
    fetch = lambda cursor, limit: service.history_after(group_id, cursor, limit)  # noqa: E731
    topic = items.group_topic(group_id)
    try:
        sync_topic(runtime, topic, fetch, report, service.acknowledge, held=held)
    except GroupNeedsRejoin as stuck:
        _mark_needs_rejoin(runtime, group_id, str(stuck))
        report.needs_rejoin[group_id.hex()] = str(stuck)
        raise
    with runtime.db.read():
        group = queries.group(runtime.db, group_id)
    if group is None:
        return
    if group.needs_rejoin and topic not in report.busy_topics:
        _resume(runtime, group_id, group.needs_rejoin)
    if not group.active:
        service.leave(group_id)  # we were removed: the service need not keep us in its group


#: ``tessera status`` shows it among its counters (a gauge: the groups marked now).
NEEDING_REJOIN_COUNTER = "counters.xmtp_groups_needing_rejoin"
_NEEDING_REJOIN = "SELECT count(*) FROM xmtp_groups WHERE needs_rejoin != ''"


def _mark_needs_rejoin(runtime: contract.Runtime, group_id: bytes, reason: str) -> None:
    with runtime.db.write():
        outcome = runtime.run_command("xmtp.mark_needs_rejoin", {"group": group_id.hex(), "reason": reason})
        runtime.kv.set(NEEDING_REJOIN_COUNTER, runtime.db.value(_NEEDING_REJOIN))
    if outcome.events:
        log.error("group %s needs a rejoin: %s", group_id.hex(), reason)


def _resume(runtime: contract.Runtime, group_id: bytes, marked: str) -> None:
    """The group marked as needing a rejoin (for ``marked``) was read again: it moves on."""
    with runtime.db.write():
        runtime.run_command("xmtp.resume_group", {"group": group_id.hex()})
        runtime.kv.set(NEEDING_REJOIN_COUNTER, runtime.db.value(_NEEDING_REJOIN))
    log.warning("group %s moves on again (it was marked: %s)", group_id.hex(), marked)


def _guarded(report: SyncReport, topic: str, work: Any) -> None:
    try:
        work()
    except (ServiceUnavailable, ServiceRefused) as exc:
        log.info("sync of %s stopped: %s", topic, exc)
        report.failures.append(f"{topic}: {exc}")
        if isinstance(exc, ServiceUnavailable):
            report.unreachable.append(topic)
    except TopicStalled as exc:
        log.warning("sync of %s stopped: %s", topic, exc)
        report.failures.append(f"{topic}: {exc}")
    except GroupNeedsRejoin as exc:
        report.failures.append(f"{topic}: needs a rejoin: {exc}")
