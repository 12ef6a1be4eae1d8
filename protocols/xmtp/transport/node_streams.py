"""The XMTP node's streams (SubscribeGroupMessages, SubscribeWelcomeMessages) as wake-ups for ``listen``.

A stream only says *that* something arrived: each message it brings is turned
into a :class:`Moved` (which group, or our welcomes) on a queue the listener
waits on, and the listener reads that topic with its normal sync.  The stream
is never a way into the pipeline of its own, so what it brings twice, late or
out of order changes nothing.  A daemon thread drains each gRPC call; when the
call ends without being cancelled (the node stopped, or could not be reached)
a :class:`StreamEnded` goes on the queue instead.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import attrs
import grpc

#: Which stream a wake-up came from.
GROUPS = "groups"
WELCOMES = "welcomes"


@attrs.frozen
class Moved:
    """The node stored a message after our cursor: ``key`` is the group id (``GROUPS``) or our installation key
    (``WELCOMES``); ``node_id`` the message's id."""

    stream: str
    key: bytes
    node_id: int


@attrs.frozen
class StreamEnded:
    """A stream ended without our asking: the node went away or refused it (``reason``)."""

    stream: str
    reason: str


Wake = Moved | StreamEnded


class NodeStream:
    """One open subscription, drained by its own thread onto ``wake``; :meth:`cancel` ends it quietly."""

    def __init__(
        self, stream: str, call: Any, key_of: Callable[[Any], tuple[bytes, int]], wake: queue.Queue[Wake]
    ) -> None:
        self.stream = stream
        self._call = call
        self._key_of = key_of
        self._wake = wake
        self._cancelled = threading.Event()
        self._thread = threading.Thread(target=self._drain, name=f"xmtp-{stream}-stream", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        reason = "the node ended the stream"
        try:
            for message in self._call:
                key, node_id = self._key_of(message)
                self._wake.put(Moved(self.stream, key, node_id))
        except grpc.RpcError as error:
            reason = f"{error.code().name}: {error.details()}"
        if not self._cancelled.is_set():
            self._wake.put(StreamEnded(self.stream, reason))

    def cancel(self) -> None:
        self._cancelled.set()
        self._call.cancel()


def group_message_key(message: Any) -> tuple[bytes, int]:
    """A streamed ``GroupMessage``'s group and id."""
    return bytes(message.v1.group_id), int(message.v1.id)


def welcome_key(installation_key: bytes) -> Callable[[Any], tuple[bytes, int]]:
    """A streamed ``WelcomeMessage``'s installation (ours: the stream follows only it) and id."""

    def key(message: Any) -> tuple[bytes, int]:
        which = message.WhichOneof("version")
        found = message.v1 if which == "v1" else message.welcome_pointer
        return installation_key, int(found.id)

    return key
