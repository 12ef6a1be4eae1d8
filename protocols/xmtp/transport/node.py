"""The XMTP v3 node API as the client's transport: ``tessera serve --xmtp-port`` or any node, by URL.

The calls are :class:`~protocols.libraries.xmtp_mls.XmtpNode`'s (gRPC, made
synchronously), read a page at a time with the node's own cursors (the id of
the last message read).  The tick's jobs call them between transactions, never
inside one.  A node that cannot be reached or does not answer in time raises
:class:`~protocols.xmtp.errors.ServiceUnavailable` (transient: retried, exit
code 4 for a command that needs it); a refusal raises
:class:`~protocols.xmtp.errors.ServiceRefused` with the gRPC status's name.
"""

from __future__ import annotations

import itertools
import queue
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from protocols.libraries.xmtp_mls import NodeUnavailable, UpdateLog, XmtpNode
from protocols.libraries.xmtp_wire.proto import associations_pb2, mls_api_pb2
from protocols.xmtp.errors import InvalidNodeUrl, ServiceRefused, ServiceUnavailable
from protocols.xmtp.transport.node_records import NodeGroupMessage, NodePage, NodeWelcome
from protocols.xmtp.transport.node_streams import (
    GROUPS,
    WELCOMES,
    NodeStream,
    Wake,
    group_message_key,
    welcome_key,
)

#: gRPC statuses that say the node did not answer (or not now), so the same call may succeed later.
TRANSIENT_CODES = frozenset(
    {"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED", "CANCELLED", "UNKNOWN", "INTERNAL"}
)

SCHEMES = ("http://", "https://")


def check_url(url: str) -> str:
    """``url`` if it names an XMTP node as libxmtp does (``http(s)://host:port``); else :class:`InvalidNodeUrl`."""
    try:
        XmtpNode(url).close()
    except NodeUnavailable:
        raise InvalidNodeUrl(
            f"{url!r} is not an XMTP node's URL: give http://HOST:PORT (or https://), e.g. the --xmtp-port of "
            "`tessera serve`"
        ) from None
    return url


@contextmanager
def _translated(url: str) -> Iterator[None]:
    try:
        yield
    except NodeUnavailable as error:
        if error.code is None or error.code in TRANSIENT_CODES:
            raise ServiceUnavailable(f"the XMTP node at {url} could not be reached: {error}") from None
        raise ServiceRefused(error.code, str(error)) from None


class NodeService:
    """A connection to one XMTP node, acting as one installation (the node authenticates nothing more)."""

    def __init__(self, url: str):
        self.url = check_url(url)
        self._node = XmtpNode(url)

    def publish_identity_update(self, update: associations_pb2.IdentityUpdate) -> None:
        with _translated(self.url):
            self._node.publish_identity_update(update)

    def inbox_id_for(self, address: str) -> str | None:
        """The inbox the node says ``address`` (an Ethereum address) belongs to, if any."""
        with _translated(self.url):
            return self._node.inbox_id_for(address.lower())

    def identity_updates(
        self, inbox_ids: list[str], *, after: Mapping[str, int] | None = None
    ) -> dict[str, list[UpdateLog]]:
        """Each inbox's identity updates past the sequence id ``after`` names for it (all, without)."""
        if not inbox_ids:
            return {}
        with _translated(self.url):
            return self._node.identity_updates(inbox_ids, after=after)

    def key_packages(self, installation_keys: list[bytes]) -> dict[bytes, bytes]:
        """The KeyPackage the node holds for each installation that has one."""
        with _translated(self.url):
            return self._node.key_packages(installation_keys)

    def send_welcomes(self, welcomes: list[tuple[bytes, bytes, bytes, bytes]]) -> None:
        """Store wrapped welcomes, each ``(installation key, HPKE public key, data, welcome metadata)``."""
        with _translated(self.url):
            self._node.send_welcomes(welcomes)

    def upload_key_package(self, key_package: bytes) -> None:
        with _translated(self.url):
            self._node.upload_key_package(key_package)

    def welcomes_after(self, installation_key: bytes, cursor: int, limit: int) -> NodePage:
        with _translated(self.url):
            read = list(itertools.islice(self._node.welcomes(installation_key, after=cursor), limit + 1))
        welcomes = tuple(_welcome(message) for message in read[:limit])
        return NodePage(welcomes, len(read) > limit)

    def group_messages_after(self, group_id: bytes, cursor: int, limit: int) -> NodePage:
        """Up to ``limit`` of the group's messages after ``cursor``, in as many of the node's pages as that
        takes.  ``has_more`` is the node's word (its cursor after a full page), so no message is fetched to
        learn that another exists: when the messages end exactly at a page's end, it says more, and the
        next call answers none."""
        read: list[mls_api_pb2.GroupMessage] = []
        following = cursor
        with _translated(self.url):
            while len(read) < limit:
                page, following = self._node.group_messages_page(group_id, after=following, limit=limit - len(read))
                read += page
                if not following or not page:
                    following = 0
                    break
        messages = tuple(
            NodeGroupMessage(int(m.v1.id), int(m.v1.created_ns), bytes(m.v1.group_id), bytes(m.v1.data)) for m in read
        )
        return NodePage(messages, bool(following))

    def follow_groups(self, cursors: Mapping[bytes, int], wake: queue.Queue[Wake]) -> NodeStream:
        """A stream of the groups' messages after each cursor, each one a wake-up on ``wake``."""
        return NodeStream(GROUPS, self._node.subscribe_group_messages(cursors), group_message_key, wake)

    def follow_welcomes(self, installation_key: bytes, cursor: int, wake: queue.Queue[Wake]) -> NodeStream:
        """A stream of our installation's welcomes after ``cursor``, each one a wake-up on ``wake``."""
        call = self._node.subscribe_welcomes(installation_key, cursor)
        return NodeStream(WELCOMES, call, welcome_key(installation_key), wake)

    def send_group_message(self, data: bytes) -> None:
        with _translated(self.url):
            self._node.send_group_message(data)

    def close(self) -> None:
        self._node.close()


def _welcome(message: mls_api_pb2.WelcomeMessage) -> NodeWelcome:
    if message.WhichOneof("version") != "v1":
        pointer = message.welcome_pointer
        return NodeWelcome(int(pointer.id), int(pointer.created_ns), b"", b"", 0, pointer=True)
    v1 = message.v1
    return NodeWelcome(
        int(v1.id), int(v1.created_ns), bytes(v1.data), bytes(v1.hpke_public_key), int(v1.wrapper_algorithm)
    )
