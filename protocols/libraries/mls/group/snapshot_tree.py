"""The ratchet tree inside a snapshot: RFC 9420's ``ratchet_tree`` wire form, remembered between snapshots.

A member's tree changes only at commits, while a snapshot is written after
every message; encoding and decoding the tree costs far more than the rest
of the state (about 4 ms each way for 100 members).  Trees are immutable,
so this codec remembers the encodings of the trees it recently wrote or
read: writing a tree object it has seen copies its bytes, and reading bytes
it has seen returns the very tree object they came from (with its tree-hash
cache).  The bytes are exactly :class:`~protocols.libraries.mls.messages.RatchetTree`'s
either way; the memory holds public data only and is bounded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ..codec import Codec, DecodeError, EncodeError, codec_of, read_varint
from ..codec.base import MISSING, Scope
from ..crypto import suite
from ..errors import MlsError
from ..messages import RatchetTree as RatchetTreeMessage
from ..tree.ratchet_tree import RatchetTree

#: How many trees, and how many bytes of their encodings, the codec remembers.
REMEMBERED_TREES = 64
REMEMBERED_BYTES = 8 << 20


class RecentTrees:
    """A bounded, least-recently-used memory of ``tree <-> encoding`` pairs, safe across threads."""

    def __init__(self, max_trees: int, max_bytes: int) -> None:
        self._max_trees = max_trees
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        # Keyed by id(tree); the entry holds the tree itself, so the id cannot be reused while it is kept.
        self._by_tree: OrderedDict[int, tuple[RatchetTree, bytes]] = OrderedDict()
        self._by_bytes: dict[tuple[int, bytes], RatchetTree] = {}
        self._size = 0

    def encoding_of(self, tree: RatchetTree) -> bytes | None:
        with self._lock:
            entry = self._by_tree.get(id(tree))
            if entry is None or entry[0] is not tree:
                return None
            self._by_tree.move_to_end(id(tree))
            return entry[1]

    def tree_of(self, suite_id: int, encoding: bytes) -> RatchetTree | None:
        with self._lock:
            tree = self._by_bytes.get((suite_id, encoding))
            if tree is not None:
                self._by_tree.move_to_end(id(tree))
            return tree

    def remember(self, tree: RatchetTree, encoding: bytes) -> None:
        if len(encoding) > self._max_bytes:
            return
        with self._lock:
            if id(tree) in self._by_tree:
                return
            key = (tree.suite.id, encoding)
            if key in self._by_bytes:
                # An equal tree is remembered already; keep that one for reads, and map this object too.
                self._forget(id(self._by_bytes[key]))
            self._by_tree[id(tree)] = (tree, encoding)
            self._by_bytes[key] = tree
            self._size += len(encoding)
            while len(self._by_tree) > self._max_trees or self._size > self._max_bytes:
                self._forget(next(iter(self._by_tree)))

    def clear(self) -> None:
        with self._lock:
            self._by_tree.clear()
            self._by_bytes.clear()
            self._size = 0

    def _forget(self, tree_id: int) -> None:
        tree, encoding = self._by_tree.pop(tree_id)
        self._by_bytes.pop((tree.suite.id, encoding), None)
        self._size -= len(encoding)


RECENT_TREES = RecentTrees(REMEMBERED_TREES, REMEMBERED_BYTES)


class RatchetTreeCodec(Codec[RatchetTree]):
    """A :class:`RatchetTree` as ``optional<Node> ratchet_tree<V>``, in the suite named by a field read before it."""

    __slots__ = ("_message", "suite_field")

    uses_scope = True

    def __init__(self, suite_field: str) -> None:
        self.suite_field = suite_field
        self._message: Codec[RatchetTreeMessage] | None = None

    def _message_codec(self) -> Codec[RatchetTreeMessage]:
        if self._message is None:
            self._message = codec_of(RatchetTreeMessage)
        return self._message

    def read(self, data: bytes, pos: int, end: int, scope: Scope) -> tuple[RatchetTree, int]:
        suite_id = scope.lookup(self.suite_field)
        if suite_id is MISSING or not isinstance(suite_id, int):
            raise DecodeError(f"the ratchet tree needs {self.suite_field} to be read first", pos)
        length, start = read_varint(data, pos, end)
        stop = start + length
        if stop > end:
            raise DecodeError(f"vector length {length} overruns the {end - start} byte(s) left", pos)
        encoding = data[pos:stop]
        tree = RECENT_TREES.tree_of(suite_id, encoding)
        if tree is None:
            message, _ = self._message_codec().read(data, pos, stop, scope)
            try:
                tree = RatchetTree.from_message(suite(suite_id), message)
            except MlsError as error:
                raise DecodeError(str(error), pos) from error
            RECENT_TREES.remember(tree, encoding)
        return tree, stop

    def write(self, out: bytearray, value: RatchetTree, scope: Scope) -> None:
        if not isinstance(value, RatchetTree):
            raise EncodeError(f"expected a RatchetTree, got {type(value).__name__}")
        encoding = RECENT_TREES.encoding_of(value)
        if encoding is None:
            buffer = bytearray()
            self._message_codec().write(buffer, value.to_message(), scope)
            encoding = bytes(buffer)
            RECENT_TREES.remember(value, encoding)
        out += encoding


RATCHET_TREE = RatchetTreeCodec("cipher_suite")
"""The codec of a struct's ``tree`` field; the struct declares ``cipher_suite`` before it."""
