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

A lock outlives a crashed holder by :data:`LOCK_NS` at most; ``tessera``
clears every lock on a cold start (:func:`clear_locks`).  A welcome opens
its group's topic at the welcome's own place in the group's history.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from core.pipeline import process_item
from core.queues import WorkItem
from core.records import ItemSource
from protocols.xmtp import items, queries
from protocols.xmtp.errors import ServiceRefused, ServiceUnavailable
from protocols.xmtp.items import PROTOCOL
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.interface import DeliveryService, Page, ServerMessage

log = logging.getLogger("tessera.xmtp.sync")

LOCK_NS = 30_000_000_000  # a sync holds its topic at most this long without renewing
PAGE = 100


@attrs.define
class SyncReport:
    """What one sync pass did."""

    processed: int = 0
    busy_topics: list[str] = attrs.Factory(list)
    failures: list[str] = attrs.Factory(list)


def _now_ns(runtime: Any) -> int:
    return int(runtime.clock.now_ms()) * 1_000_000


def take_lock(runtime: Any, topic: str, holder_until_ns: int | None = None) -> str | None:
    """Take ``topic``'s lock when it is free; its cursor ('' at the start), or None when another sync holds it."""
    now = _now_ns(runtime)
    with runtime.db.write():
        runtime.db.execute("INSERT INTO xmtp_topic_refresh_state(topic) VALUES (?) ON CONFLICT DO NOTHING", (topic,))
        row = runtime.db.one("SELECT cursor, lock_until_ns FROM xmtp_topic_refresh_state WHERE topic = ?", (topic,))
        assert row is not None
        if row[1] > now:
            return None
        until = holder_until_ns if holder_until_ns is not None else now + LOCK_NS
        runtime.db.execute("UPDATE xmtp_topic_refresh_state SET lock_until_ns = ? WHERE topic = ?", (until, topic))
        return str(row[0])


def extend_lock(runtime: Any, topic: str) -> None:
    """Keep holding ``topic`` (a live subscription's heartbeat)."""
    with runtime.db.write():
        runtime.db.execute(
            "UPDATE xmtp_topic_refresh_state SET lock_until_ns = ? WHERE topic = ?", (_now_ns(runtime) + LOCK_NS, topic)
        )


def release_lock(runtime: Any, topic: str) -> None:
    with runtime.db.write():
        runtime.db.execute("UPDATE xmtp_topic_refresh_state SET lock_until_ns = 0 WHERE topic = ?", (topic,))


def clear_locks(runtime: Any) -> int:
    """Free every topic (a cold start: no sync of this database is running)."""
    with runtime.db.write():
        runtime.db.execute("UPDATE xmtp_topic_refresh_state SET lock_until_ns = 0 WHERE lock_until_ns != 0")
        return int(runtime.db.value("SELECT changes()", default=0))


@contextmanager
def holding(runtime: Any, topic: str) -> Iterator[str | None]:
    """The topic's cursor while we hold its lock (None: another sync holds it); released on the way out."""
    cursor = take_lock(runtime, topic)
    try:
        yield cursor
    finally:
        if cursor is not None:
            release_lock(runtime, topic)


def process(runtime: Any, topic: str, message: ServerMessage) -> None:
    """One payload through the pipeline, and the topic's cursor past it, in one transaction."""
    blob = items.encode(topic, message)
    item = WorkItem(PROTOCOL, blob, ItemSource.BACKFILL, 0, partition_key=message.group_id.hex())
    with runtime.db.write():
        process_item(runtime, item, runtime.clock.now_ms())
        _advance(runtime, topic, message)
        if topic.startswith("w/"):
            # The group's own topic starts where the welcome stands in its history.
            runtime.db.execute(
                "INSERT INTO xmtp_topic_refresh_state(topic, cursor, last_message_timestamp_ns) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (items.group_topic(message.group_id), message.cursor, message.server_timestamp_us * 1000),
            )


def _advance(runtime: Any, topic: str, message: ServerMessage) -> None:
    runtime.db.execute(
        "UPDATE xmtp_topic_refresh_state SET cursor = ?, last_message_timestamp_ns = ? WHERE topic = ?",
        (message.cursor, message.server_timestamp_us * 1000, topic),
    )


def sync_topic(runtime: Any, topic: str, fetch: Any, report: SyncReport) -> None:
    """Fetch and process ``topic`` page after page while we hold its lock."""
    with holding(runtime, topic) as cursor:
        if cursor is None:
            report.busy_topics.append(topic)
            return
        while True:
            page: Page = fetch(cursor or None, PAGE)
            for message in page.messages:
                process(runtime, topic, message)
                report.processed += 1
                cursor = message.cursor
            if not page.has_more or not page.messages:
                return


def sync_all(runtime: Any, service: DeliveryService) -> SyncReport:
    """Our welcomes, then every group we read; a topic another sync holds is skipped this time."""
    report = SyncReport()
    with runtime.db.read():
        installation = Vault.of(runtime.db).identity().installation_id
    _guarded(
        report,
        items.welcome_topic(installation),
        lambda: sync_topic(runtime, items.welcome_topic(installation), service.welcomes_after, report),
    )
    with runtime.db.read():
        groups = queries.synced_groups(runtime.db)
    for group in groups:
        topic = items.group_topic(group.id)

        def one_group(group_id: bytes = group.id, topic: str = topic) -> None:
            service.join(group_id)
            sync_topic(runtime, topic, lambda cursor, limit: service.history_after(group_id, cursor, limit), report)
            _leave_if_removed(runtime, service, group_id)

        _guarded(report, topic, one_group)
    return report


def _guarded(report: SyncReport, topic: str, work: Any) -> None:
    try:
        work()
    except (ServiceUnavailable, ServiceRefused) as exc:
        log.info("sync of %s stopped: %s", topic, exc)
        report.failures.append(f"{topic}: {exc}")


def _leave_if_removed(runtime: Any, service: DeliveryService, group_id: bytes) -> None:
    with runtime.db.read():
        group = queries.group(runtime.db, group_id)
    if group is not None and not group.active:
        service.leave(group_id)
