"""Decrypting a group's application messages ahead of the writer, in a helper process.

A catch-up through one writer pays, message after message on one core, the
engine's decrypt (sender data, ratchet, AEAD, the sender's signature) and
then its own recording.  A helper process holding a copy of the group state
can run the engine over the next page of messages while the writer records
this one; it hands back what each message decrypted to and the state after
the page, and the writer adopts that state once per page.

The copy stays the writer's state exactly as long as the writer makes the
transitions the helper made:

* a message the helper decrypted is recorded by the writer, and its key is
  used up on both sides;
* a message the helper could not decrypt changes neither (the engine leaves
  a state untouched when it refuses a message);
* at the first message that is not application data (a commit or proposal:
  the writer decides what those do, from its pending commit and the epoch
  server order gave it) the helper stops and leaves the rest of the page to
  the writer.

The writer checks each message of a page against what the helper did and,
at the first that went otherwise, handles the page itself and seeds the
helper again (:meth:`DecryptAhead.seed`).  A seed starts a new *token*;
work of an older token is abandoned as soon as the helper notices.

Starting the helper (a new interpreter that imports the engine) takes longer
than a catch-up of a few thousand messages: :meth:`DecryptAhead.warm` starts
it and says whether it is up, so the writer handles pages itself until it is
instead of waiting for it.

Forward secrecy: the helper's copy is in memory only, holds no key the
writer's stored state does not hold too until the writer commits the page,
and is dropped with :meth:`DecryptAhead.forget` when the catch-up ends.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import attrs

from .api import ApplicationReceived, process_message, restore, snapshot
from .group.state import GroupState


@attrs.frozen
class Decrypted:
    """One application message as the helper decrypted it (:class:`~.api.ApplicationReceived` without
    the state, which the writer takes once per page from :attr:`OpenedPage.state`)."""

    sender_credential: str
    plaintext: bytes = attrs.field(repr=False)
    epoch: int
    #: SHA-256 of the payload it decrypted: whoever takes it checks it is this payload's
    payload_digest: bytes = attrs.field(repr=False)
    #: The sender's leaf signature key (:attr:`~.api.ApplicationReceived.sender_signature_key`).
    sender_signature_key: bytes = b""

    def received(self, state: GroupState) -> ApplicationReceived:
        """The engine's own answer for this message, with ``state`` as its state (the caller's, unmoved: the
        keys the helper used up arrive with the page's state, which the writer adopts once)."""
        return ApplicationReceived(self.sender_credential, self.plaintext, self.epoch, state, self.sender_signature_key)


@attrs.frozen
class OpenedPage:
    """What the helper did with a page of payloads.

    Attributes:
        token: the seed it was worked from; stale once another seed was sent.
        messages: for each payload before ``stopped_at``, what it decrypted to, or None when the engine
            refused it (the writer meets the refusal itself, with its type and reason).
        state: the group state after them (:func:`~.api.snapshot` form), or None when none decrypted.
        stopped_at: the first payload left to the writer (one that is not application data), or the
            page's length.
    """

    token: int
    messages: tuple[Decrypted | None, ...]
    state: bytes | None = attrs.field(repr=False)
    stopped_at: int


class DecryptAhead:
    """The writer's side of one helper process (started on first use, shared by every group)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._tokens = 0
        self._current: Any = None  # the token the helper should work under: stale work stops early
        self._up: Future[None] | None = None  # the helper's first answer: it is up once this is done

    def seed(self, group_id: bytes, state: GroupState) -> None:
        """Start the helper's copy of ``group_id`` from ``state`` (the writer's, as committed); whatever
        it was doing for the group under an older seed is abandoned."""
        with self._lock:
            self._started()
            self._tokens += 1
            self._current.value = self._tokens
            self._submit(_seed, group_id, self._tokens, snapshot(state))

    def submit(self, group_id: bytes, payloads: Sequence[bytes]) -> Future[OpenedPage]:
        """Decrypt ``payloads`` (the group's next messages in server order) on the helper's copy.

        The future fails with :class:`~concurrent.futures.process.BrokenProcessPool` when the helper
        died; seed again to start another."""
        with self._lock:
            return self._submit(_decrypt, group_id, self._tokens, list(payloads))

    def warm(self) -> bool:
        """Start the helper if it is not running, without waiting for it; whether it is up (it has answered
        once, so work handed to it now waits on nothing but that work)."""
        with self._lock:
            self._started()
            return self._up is not None and self._up.done()

    def current(self, page: OpenedPage) -> bool:
        """Whether ``page`` was worked from the latest seed."""
        return page.token == self._tokens

    def forget(self, group_id: bytes) -> None:
        """Drop the helper's copy of ``group_id`` (its keys leave the helper's memory)."""
        with self._lock:
            if self._pool is not None:
                self._pool.submit(_forget, group_id)

    def processes(self) -> list[int]:
        """The helper's process ids (none before its first use); for measuring it."""
        with self._lock:
            pool = self._pool
        return [] if pool is None else [process.pid for process in getattr(pool, "_processes", {}).values()]

    def close(self) -> None:
        """Stop the helper process (a later use starts another)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _submit(self, *call: Any) -> Future[Any]:
        try:
            return self._started().submit(*call)
        except BrokenProcessPool:
            # The helper died (killed, out of memory): the next one starts empty, so its copies are gone
            # and work under the current token finds no chain (the writer then seeds again).
            self._pool = None
            return self._started().submit(*call)

    def _started(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn: the writer runs network threads, which a forked child would inherit mid-call.
            context = multiprocessing.get_context("spawn")
            self._current = context.Value("q", self._tokens, lock=False)
            self._pool = ProcessPoolExecutor(1, mp_context=context, initializer=_start, initargs=(self._current,))
            self._up = self._pool.submit(_ready)
        return self._pool


# --- the helper process -------------------------------------------------------------------------

_chains: dict[bytes, tuple[int, GroupState | None]] = {}


class _Seeded:
    """The token the writer wants work under (shared memory the writer updates as it seeds)."""

    current: Any = None


def _start(current: Any) -> None:
    _Seeded.current = current


def _ready() -> None:
    """Nothing: its answer says the helper is up (:meth:`DecryptAhead.warm`)."""


def _seed(group_id: bytes, token: int, state: bytes) -> None:
    _chains[group_id] = (token, restore(state))


def _forget(group_id: bytes) -> None:
    _chains.pop(group_id, None)


def _decrypt(group_id: bytes, token: int, payloads: list[bytes]) -> OpenedPage:
    chain = _chains.get(group_id)
    if chain is None or chain[0] != token or chain[1] is None:
        return OpenedPage(token, (), None, 0)  # stale, or stopped: the writer handles the page itself
    state: GroupState = chain[1]
    opened: list[Decrypted | None] = []
    moved = False
    stopped_at = len(payloads)
    for position, payload in enumerate(payloads):
        if _Seeded.current.value != token:
            return OpenedPage(token, (), None, 0)  # seeded again meanwhile: nobody will use this
        try:
            received = process_message(state, payload)
        except Exception:  # refused: the writer meets the same refusal, typed, and records it
            opened.append(None)
            continue
        if not isinstance(received, ApplicationReceived):
            stopped_at = position
            break
        digest = hashlib.sha256(payload).digest()
        opened.append(
            Decrypted(
                received.sender_credential, received.plaintext, received.epoch, digest, received.sender_signature_key
            )
        )
        state, moved = received.new_state, True
    # After a stop the writer applies the handshake itself and seeds again; until then nothing more is done.
    _chains[group_id] = (token, state if stopped_at == len(payloads) else None)
    return OpenedPage(token, tuple(opened), snapshot(state) if moved else None, stopped_at)
