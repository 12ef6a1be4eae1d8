"""The node profile's sync: our welcomes, then every group we accepted, read from the node in its order.

Each topic (``w/<installation>``, ``g/<group>``) is read under its lock
(:func:`protocols.xmtp.sync.holding`, seed 002's topic locks) a page at a time
after its cursor (the node's id of the last message processed).  Each message
goes through the core's door (``runtime.door()``: the tick's own pipeline) in
a savepoint that also moves the cursor, committed in micro-batches, so a crash
loses nothing and processes nothing twice.  A welcome or commit whose members' identity updates
this database does not have yet comes back from its handler as
:class:`~protocols.libraries.xmtp_mls.IdentityUpdatesBehind`, nothing changed:
the updates are fetched (network, between transactions) and the message is
handed in again; if the node's updates still do not reach what it records, it
is parked with the reason, as any message the handlers refuse.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from functools import partial

from core import contract
from core.batch import MicroBatch
from core.errors import TransientError
from core.pipeline import Outcome
from core.queues import WorkItem
from core.records import ItemSource
from protocols.libraries.mls.ahead import Decrypted
from protocols.libraries.xmtp_mls import IdentityUpdatesBehind
from protocols.xmtp import queries
from protocols.xmtp.errors import ServiceRefused, ServiceUnavailable
from protocols.xmtp.facts import PROTOCOL
from protocols.xmtp.node_profile import ahead, identity_updates, items
from protocols.xmtp.state import Vault
from protocols.xmtp.sync import SyncReport, holding
from protocols.xmtp.transport.node import NodeService
from protocols.xmtp.transport.node_records import NodeGroupMessage, NodePage, NodeWelcome

log = logging.getLogger("tessera.xmtp.sync")

PAGE = 100  # the node's most to a page (docs/xmtp-node.md, paging)

_ADVANCE = "UPDATE xmtp_topic_refresh_state SET cursor = ?, last_message_timestamp_ns = ? WHERE topic = ?"

NodeMessage = NodeGroupMessage | NodeWelcome


def sync_all(runtime: contract.Runtime, node: NodeService) -> SyncReport:
    """Our welcomes, then each group we accepted and still belong to; what could not be read is reported."""
    report = SyncReport()
    with runtime.db.read():
        installation_key = Vault.of_runtime(runtime).inbox().installation_key
    welcomes = items.welcome_topic(installation_key)
    _guarded(report, welcomes, partial(_read, runtime, node, welcomes, _welcomes_of(node, installation_key), report))
    with runtime.db.read():
        groups = [row.id for row in queries.synced_groups(runtime.db)]
    for group_id in groups:
        topic = items.group_topic(group_id)
        fetch = _messages_of(node, group_id)
        _guarded(report, topic, partial(_read, runtime, node, topic, fetch, report, group_id=group_id))
    return report


def sync_topics(runtime: contract.Runtime, node: NodeService, topics: Iterable[str]) -> SyncReport:
    """Only ``topics`` (our welcomes' topic, groups we read), each read as :func:`sync_all` reads it: what
    ``listen`` does when a stream says a topic moved.  A topic that is neither (a group we left, declined,
    or that was removed from meanwhile) is passed over."""
    report = SyncReport()
    with runtime.db.read():
        installation_key = Vault.of_runtime(runtime).inbox().installation_key
        groups = {items.group_topic(row.id): row.id for row in queries.synced_groups(runtime.db)}
    welcomes = items.welcome_topic(installation_key)
    for topic in topics:
        if topic == welcomes:
            fetch = _welcomes_of(node, installation_key)
        elif topic in groups:
            fetch = _messages_of(node, groups[topic])
        else:
            continue
        _guarded(report, topic, partial(_read, runtime, node, topic, fetch, report))
    return report


def _welcomes_of(node: NodeService, installation_key: bytes) -> Callable[[int], NodePage]:
    return lambda cursor: node.welcomes_after(installation_key, cursor, PAGE)


def _messages_of(node: NodeService, group_id: bytes) -> Callable[[int], NodePage]:
    return lambda cursor: node.group_messages_after(group_id, cursor, PAGE)


def _guarded(report: SyncReport, topic: str, work: Callable[[], None]) -> None:
    try:
        work()
    except ServiceUnavailable as exc:
        report.unreachable.append(topic)
        report.failures.append(f"{topic}: {exc}")
    except ServiceRefused as exc:
        report.failures.append(f"{topic}: {exc}")


def _read(
    runtime: contract.Runtime,
    node: NodeService,
    topic: str,
    fetch: Callable[[int], NodePage],
    report: SyncReport,
    *,
    group_id: bytes | None = None,
) -> None:
    with holding(runtime, topic) as cursor:
        if cursor is None:
            report.busy_topics.append(topic)
            return
        page = fetch(int(cursor or 0))
        reader = None if group_id is None else ahead.reader_for(runtime, group_id, page.has_more)
        if reader is not None:
            _read_ahead(runtime, node, topic, fetch, report, page, reader)
            return
        while True:
            _process_page(runtime, node, topic, list(page.messages), report)
            if not (page.has_more and page.messages):
                return
            page = fetch(page.messages[-1].id)


def _read_ahead(
    runtime: contract.Runtime,
    node: NodeService,
    topic: str,
    fetch: Callable[[int], NodePage],
    report: SyncReport,
    page: NodePage,
    reader: ahead.NodeGroupReader,
) -> None:
    """A group's pages with the helper decrypting each while the one before it is fetched and recorded
    (:mod:`.ahead`); the node is asked for the next page before this one is recorded."""
    run_alone = partial(_pages_messages, runtime, node, topic, report)
    record_one = partial(_one_decrypted, runtime, topic)
    messages = _group_messages(page)
    try:
        reader.seed()
        opened = reader.submit(messages)
        while True:
            upcoming = fetch(messages[-1].id) if page.has_more and messages else None
            following = _group_messages(upcoming) if upcoming is not None else []
            following_opened = reader.submit(following) if upcoming is not None else None
            if reader.record(messages, opened, record_one, run_alone):
                reader.seed()
                if upcoming is not None:
                    following_opened = reader.submit(following)
            if upcoming is None or following_opened is None:
                return
            page, messages, opened = upcoming, following, following_opened
    finally:
        reader.close()
        report.processed += reader.recorded
        report.decrypted_ahead += reader.adopted
        report.waited_for_helper_s += reader.waited_s


def _group_messages(page: NodePage) -> list[NodeGroupMessage]:
    found = [message for message in page.messages if isinstance(message, NodeGroupMessage)]
    assert len(found) == len(page.messages), "a group topic's pages hold its group messages"
    return found


def _pages_messages(
    runtime: contract.Runtime, node: NodeService, topic: str, report: SyncReport, messages: Sequence[NodeMessage]
) -> None:
    _process_page(runtime, node, topic, list(messages), report)


def _process_page(
    runtime: contract.Runtime, node: NodeService, topic: str, messages: list[NodeMessage], report: SyncReport
) -> None:
    """A page's messages in micro-batches (each message in its own savepoint with its cursor move, a commit
    every ``batch_items`` messages or ``batch_ms``): a crash redoes the uncommitted ones whole.  A message
    that needs identity updates this database lacks stops the batch before it; what came before is
    committed, the updates are fetched, and the page goes on from that message."""
    refreshed: set[str] = set()
    while messages:
        behind = None
        with MicroBatch(runtime.db) as batch:
            for index, message in enumerate(messages):
                behind = batch.run(partial(_one, runtime, topic, message, refreshed), isolated=False)
                if behind is not None:
                    batch.commit()
                    messages = messages[index:]
                    break
                report.processed += 1
            else:
                messages = []
        if behind is not None:
            identity_updates.refresh(runtime, node, behind.wanted)
            refreshed |= set(behind.wanted)


def _one_decrypted(
    runtime: contract.Runtime, topic: str, message: NodeGroupMessage, decrypted: Decrypted | None
) -> Outcome | None:
    """One message of a chunk the helper opened, through the door with ``decrypted`` as its prepared result,
    and the cursor past it, in a savepoint of the chunk's transaction; None when it failed (nothing of it
    kept: the chunk is then handled without the helper, where a failure is disposed of as always)."""
    envelope = items.group_envelope(message)
    blob = items.encode_group_message(message)
    item = WorkItem(
        PROTOCOL,
        blob,
        ItemSource.BACKFILL,
        0,
        partition_key=envelope.partition_key,
        decoded=envelope,
        prepared=decrypted,
    )
    with runtime.db.write():
        outcome = runtime.door().attempt(item, lambda failure: False)
        if outcome is not None:
            runtime.db.execute(_ADVANCE, (str(message.id), message.created_ns, topic))
    return outcome


def _one(
    runtime: contract.Runtime, topic: str, message: NodeMessage, refreshed: set[str]
) -> IdentityUpdatesBehind | None:
    """One message through the door and the cursor past it, in a savepoint of the caller's transaction; the
    :class:`IdentityUpdatesBehind` to fetch for (returned, not raised: raised through the batch, it would roll
    the whole batch back), unless those inboxes were fetched already: then the node lacks them, and the
    message is parked with the reason like any the handlers refuse."""
    envelope = items.welcome_envelope(message) if isinstance(message, NodeWelcome) else items.group_envelope(message)
    blob = items.encode_welcome(message) if isinstance(message, NodeWelcome) else items.encode_group_message(message)
    item = WorkItem(PROTOCOL, blob, ItemSource.BACKFILL, 0, partition_key=envelope.partition_key, decoded=envelope)

    def disposes(failure: BaseException) -> bool:
        if isinstance(failure, IdentityUpdatesBehind) and not set(failure.wanted) <= refreshed:
            raise failure  # nothing kept: fetched, then handed in again
        if isinstance(failure, TransientError):
            log.warning("%s: message %d failed for now and is parked to be retried: %s", topic, message.id, failure)
        return True  # parked (or retried) with its reason by the pipeline; the topic moves on

    try:
        with runtime.db.write():
            runtime.door().attempt(item, disposes)
            runtime.db.execute(_ADVANCE, (str(message.id), message.created_ns, topic))
    except IdentityUpdatesBehind as behind:
        return behind
    return None
