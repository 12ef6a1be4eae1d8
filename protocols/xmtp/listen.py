"""``tessera xmtp listen`` on the private profile: a live subscription that processes pushed messages as they arrive
(the node profile's is :mod:`protocols.xmtp.node_profile.listen`).

It holds the locks of its topics for as long as it runs (our welcomes and
every group we read), extending them on a heartbeat, so no other sync of
this database processes them meanwhile; they are released when it stops.
At start, after every publish, and on each heartbeat it syncs its topics
from history (catching up what arrived while it was away, and reading our
own messages back, which the server does not push to their sender).
Between syncs a pushed message of a group is processed as it is when it
comes after the group's cursor and nothing of ours in that group awaits
confirmation; otherwise the group is synced from history, which keeps
server order whatever the pushes missed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import attrs

from core import contract
from protocols.xmtp import items, keypackages, publishing, queries, sync
from protocols.xmtp.connection import XmtpMember
from protocols.xmtp.errors import ServiceRefused, ServiceUnavailable
from protocols.xmtp.intent_machine import IntentBook
from protocols.xmtp.private_publishing import PrivatePublisher
from protocols.xmtp.rereading import Suspect, position
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.interface import ServerMessage
from protocols.xmtp.transport.websocket import WebSocketService

log = logging.getLogger("tessera.xmtp.listen")

HEARTBEAT_S = sync.LOCK_NS / 1e9 / 3
POLL_S = 0.2  # how often the loop looks for intents written by other processes (`tessera xmtp send`)


@attrs.define
class ListenReport:
    """What a listen session did."""

    pushed: int = 0
    synced: int = 0
    published: int = 0
    reconnects: int = 0


@attrs.define
class Listener:
    """One session: ``runtime``'s database, ``service`` with pushes kept, until ``stop`` is set."""

    runtime: contract.Runtime
    service: WebSocketService
    stop: threading.Event = attrs.Factory(threading.Event)
    on_processed: Callable[[int], None] | None = None
    report: ListenReport = attrs.Factory(ListenReport)
    held: set[str] = attrs.Factory(set)

    def run(self) -> ListenReport:
        self.runtime.service(XmtpMember).cold_start()
        try:
            self._connect()
            next_beat = 0.0
            while not self.stop.is_set():
                if time.monotonic() >= next_beat:
                    self._beat()
                    next_beat = time.monotonic() + HEARTBEAT_S
                if self._publish():
                    self._sync()
                self._take_pushes()
        finally:
            for topic in sorted(self.held):
                sync.release_lock(self.runtime, topic)
            self.held.clear()
        return self.report

    # --- steps -------------------------------------------------------------------------------------

    def _connect(self) -> None:
        while not self.stop.is_set():
            try:
                self.service.connect()
                return
            except ServiceUnavailable as exc:
                log.warning("listen: %s; trying again", exc)
                self.stop.wait(min(HEARTBEAT_S, 2.0))

    def _beat(self) -> None:
        """Hold our topics a while longer, take new ones, keep the KeyPackage stock, and sync."""
        for topic in sorted(self.held):
            sync.extend_lock(self.runtime, topic)
        for topic in self._topics() - self.held:
            if sync.take_lock(self.runtime, topic) is not None:
                self.held.add(topic)
        keypackages.keep_stock(self.runtime, self.service)
        self._sync()

    def _topics(self) -> set[str]:
        with self.runtime.db.read():
            installation = Vault.of(self.runtime.db).identity().installation_id
            groups = queries.synced_groups(self.runtime.db)
        return {items.welcome_topic(installation), *(items.group_topic(g.id) for g in groups)}

    def _sync(self) -> None:
        before = set(self._topics())
        report = sync.sync_all(self.runtime, self.service, held=frozenset(self.held))
        self.report.synced += report.processed
        self._processed(report.processed)
        if self._topics() != before:  # a welcome accepted meanwhile, or a group we left
            self._retake()
        for failure in report.failures:
            log.info("listen: %s", failure)

    def _retake(self) -> None:
        topics = self._topics()
        for topic in sorted(self.held - topics):
            sync.release_lock(self.runtime, topic)
            self.held.discard(topic)
        for topic in topics - self.held:
            if sync.take_lock(self.runtime, topic) is not None:
                self.held.add(topic)

    def _publish(self) -> bool:
        done = publishing.publish_pass(self.runtime, PrivatePublisher(self.service))
        self.report.published += done
        return done > 0

    def _take_pushes(self) -> None:
        try:
            message = self.service.pushed(POLL_S)
        except ServiceUnavailable as exc:
            log.warning("listen: %s", exc)
            self.report.reconnects += 1
            self._connect()
            self._sync()
            return
        while message is not None:
            self._on_push(message)
            message = self.service.pushed(0)

    def _on_push(self, message: ServerMessage) -> None:
        self.report.pushed += 1
        topic = items.group_topic(message.group_id)
        if topic not in self.held:
            if message.message_type == 2:  # a welcome to us: read from our welcome topic
                self._sync()
            return  # a group we do not read now: its sync, later, picks it up
        if self._in_order(topic, message):
            try:
                sync.process(self.runtime, topic, message)
            except Suspect as suspect:
                # It failed (a commit before it missed, or damaged on the way): history says what it is.
                log.info("listen: pushed %s", suspect)
                self._sync()
                return
            self._processed(1)
            try:
                self.service.acknowledge([message.id])
            except (ServiceUnavailable, ServiceRefused) as exc:
                log.info("listen: acknowledging %s failed: %s", message.id, exc)
        elif position(message.cursor) > position(sync.cursor_of(self.runtime, topic)):
            self._sync()

    def _in_order(self, topic: str, message: ServerMessage) -> bool:
        """Whether the push may be processed as it is: right after the cursor (the next by the server's
        numbers, when it gives them), nothing of ours unconfirmed."""
        here = sync.place_of(self.runtime, topic)
        if position(message.cursor) <= position(here.cursor):
            return False
        if message.sequence is not None and here.sequence is not None and message.sequence != here.sequence + 1:
            return False  # one before it has not come (or it came before): history says
        with self.runtime.db.read():
            waiting = IntentBook(self.runtime.db).awaits_confirmation(message.group_id)
        return not waiting

    def _processed(self, count: int) -> None:
        if count and self.on_processed is not None:
            self.on_processed(count)
