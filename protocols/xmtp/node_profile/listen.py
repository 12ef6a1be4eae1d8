"""``tessera xmtp listen`` on the node profile: the node's streams say *that* a topic moved, its sync reads it.

The node's SubscribeWelcomeMessages (our installation) and SubscribeGroupMessages
(every group we read, each from its cursor) are opened as wake-ups only
(:mod:`protocols.xmtp.transport.node_streams`), as libxmtp's streams are after a
gap.  A wake-up names a topic; the topic is then read by the same sync
``tessera xmtp sync`` runs (:func:`.sync.sync_topics`: under the topic's lock,
a page at a time after its cursor, each message through the core's door), so a
message the stream brings twice, late or not at all changes nothing: the
node's history is what is processed.

On every (re)connect the listener first syncs everything (nothing sent while it
was away is missed), then opens the streams from the cursors that sync left.
The group stream is opened again whenever the set of groups we read changes (a
welcome accepted here or by ``tessera xmtp accept``, a removal).  When a
stream ends without being asked to (the node stopped or went away), the
listener says so and tries again with a growing delay.  Intents written by
other processes (``tessera xmtp send``) are published as they appear; their
read-back comes through the group's stream like anyone's message.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable

import attrs

from core import contract
from jobs import output
from protocols.xmtp import publishing, queries, sync
from protocols.xmtp.connection import XmtpMember
from protocols.xmtp.errors import ServiceUnavailable
from protocols.xmtp.node_profile import items, registration
from protocols.xmtp.node_profile import sync as node_sync
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.node import NodeService
from protocols.xmtp.transport.node_streams import GROUPS, Moved, NodeStream, StreamEnded, Wake

log = logging.getLogger("tessera.xmtp.listen")

POLL_S = 0.2  # how often intents written by other processes and changes of our groups are looked for
FIRST_DELAY_S = 0.5  # the first wait before connecting again; it doubles up to LONGEST_DELAY_S
LONGEST_DELAY_S = 5.0
STOCK_EVERY_S = 60.0  # the KeyPackage stock is also kept on this beat (a welcome read keeps it at once)
#: Groups per SubscribeGroupMessages request: a node refuses more than 1,000 filters in one (as ours does).
GROUPS_PER_STREAM = 500


class Disconnected(Exception):
    """A stream ended without our asking: the listener connects again."""


@attrs.define
class NodeListenReport:
    """What a listen session did."""

    woken: int = 0
    synced: int = 0
    published: int = 0
    reconnects: int = 0


@attrs.define
class NodeListener:
    """One session on ``runtime``'s database through ``node``, until ``stop`` is set.

    ``on_processed(count)`` is called after each sync that processed messages; ``on_progress(line)`` with
    what a person watching should know (connected, disconnected, the delay before the next try)."""

    runtime: contract.Runtime
    node: NodeService
    stop: threading.Event = attrs.Factory(threading.Event)
    on_processed: Callable[[int], None] | None = None
    on_progress: Callable[[str], None] | None = None
    report: NodeListenReport = attrs.Factory(NodeListenReport)
    _wake: queue.Queue[Wake] = attrs.Factory(queue.Queue)
    _welcome_stream: NodeStream | None = None
    _group_streams: list[NodeStream] = attrs.Factory(list)
    _followed: frozenset[bytes] = frozenset()
    _installation_key: bytes = b""

    def run(self) -> NodeListenReport:
        member = self.runtime.service(XmtpMember)
        member.cold_start()
        with self.runtime.db.read():
            self._installation_key = Vault.of_runtime(self.runtime).inbox().installation_key
        delay = FIRST_DELAY_S
        while not self.stop.is_set():
            try:
                # A queue of its own for each connection: what the last one's streams put there as they ended
                # (both end when the node goes) must not end this one.
                self._wake = queue.Queue()
                self._catch_up()
                self._open_welcomes()
                self._open_groups()
                groups = output.plural(len(self._followed), "group")
                self._progress(f"following {self.node.url}: {groups} and our welcomes")
                delay = FIRST_DELAY_S
                self._follow()
            except (ServiceUnavailable, Disconnected) as lost:
                self.report.reconnects += 1
                self._progress(f"lost the node ({lost}); connecting again in {delay:.1f}s")
                self.stop.wait(delay)
                delay = min(delay * 2, LONGEST_DELAY_S)
            finally:
                self._close_streams()
        return self.report

    # --- connecting ---------------------------------------------------------------------------------

    def _catch_up(self) -> None:
        """Everything since the cursors, before the streams open: what came while we were away."""
        registration.keep_stock(self.runtime, self.node)
        self._publish()
        self._after_sync(node_sync.sync_all(self.runtime, self.node))

    def _open_welcomes(self) -> None:
        cursor = self._cursor(items.welcome_topic(self._installation_key))
        self._welcome_stream = self.node.follow_welcomes(self._installation_key, cursor, self._wake)

    def _open_groups(self) -> None:
        """Group streams over the groups we read now, each from its cursor, ``GROUPS_PER_STREAM`` to a stream
        (no group: no stream); those open before are ended first."""
        for stream in self._group_streams:
            stream.cancel()
        self._group_streams.clear()
        groups = self._groups()
        self._followed = groups
        ordered = sorted(groups)
        for start in range(0, len(ordered), GROUPS_PER_STREAM):
            part = ordered[start : start + GROUPS_PER_STREAM]
            cursors = {group_id: self._cursor(items.group_topic(group_id)) for group_id in part}
            self._group_streams.append(self.node.follow_groups(cursors, self._wake))

    def _close_streams(self) -> None:
        for stream in self._group_streams:
            stream.cancel()
        self._group_streams.clear()
        if self._welcome_stream is not None:
            self._welcome_stream.cancel()
            self._welcome_stream = None

    # --- following ----------------------------------------------------------------------------------

    def _follow(self) -> None:
        """Wake-ups read as they come, until ``stop``; :class:`Disconnected` when a stream ends."""
        waiting: set[str] = set()  # topics another sync held: read again on the next poll
        stocked = time.monotonic()
        while not self.stop.is_set():
            moved = self._take(POLL_S)
            self.report.woken += len(moved)
            self._publish()
            waiting = self._sync(waiting | moved)
            if self._groups() != self._followed:  # accepted (here or by another process), or removed
                self._open_groups()
            if time.monotonic() - stocked > STOCK_EVERY_S:
                registration.keep_stock(self.runtime, self.node)
                stocked = time.monotonic()

    def _take(self, timeout: float) -> set[str]:
        """The topics woken within ``timeout`` (all that are queued, once each)."""
        topics: set[str] = set()
        try:
            wake: Wake | None = self._wake.get(timeout=timeout)
        except queue.Empty:
            return topics
        while wake is not None:
            if isinstance(wake, StreamEnded):
                raise Disconnected(f"the {wake.stream} stream ended: {wake.reason}")
            topics.add(self._topic(wake))
            try:
                wake = self._wake.get_nowait()
            except queue.Empty:
                wake = None
        return topics

    def _topic(self, moved: Moved) -> str:
        if moved.stream == GROUPS:
            return items.group_topic(moved.key)
        return items.welcome_topic(moved.key)

    def _sync(self, topics: Iterable[str]) -> set[str]:
        """The topics read by their sync; those another sync held come back, to be read on the next poll."""
        wanted = sorted(topics)
        if not wanted:
            return set()
        report = node_sync.sync_topics(self.runtime, self.node, wanted)
        self._after_sync(report)
        if items.welcome_topic(self._installation_key) in wanted and report.processed:
            registration.keep_stock(self.runtime, self.node)  # a welcome used our KeyPackage: a fresh one
        return set(report.busy_topics)

    def _after_sync(self, report: sync.SyncReport) -> None:
        if report.unreachable:
            raise ServiceUnavailable(report.failures[0])
        for failure in report.failures:
            log.info("listen: %s", failure)
        self.report.synced += report.processed
        if report.processed and self.on_processed is not None:
            self.on_processed(report.processed)

    def _publish(self) -> None:
        self.report.published += publishing.publish_pass(self.runtime, self.runtime.service(XmtpMember).publisher())

    # --- reading the database -----------------------------------------------------------------------

    def _groups(self) -> frozenset[bytes]:
        with self.runtime.db.read():
            return frozenset(row.id for row in queries.synced_groups(self.runtime.db))

    def _cursor(self, topic: str) -> int:
        return int(sync.cursor_of(self.runtime, topic) or 0)

    def _progress(self, line: str) -> None:
        log.info("listen: %s", line)
        if self.on_progress is not None:
            self.on_progress(line)
