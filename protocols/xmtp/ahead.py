"""A group's catch-up with its payloads decrypted a page ahead, in a helper process.

:mod:`protocols.libraries.mls.ahead` runs the engine over the next page while this
process records the current one.  Here a page the helper opened is recorded
in one transaction: each payload goes through the core's door as always,
carrying what the helper made of it as its prepared result (``WorkItem.prepared``,
a :class:`~protocols.libraries.mls.ahead.Decrypted`, which the handler finds in
``ctx.prepared``); the handler records the helper's plaintext instead of
decrypting, and the page stages the state the helper ended with once, before
COMMIT.  Every payload is checked against what the helper did with it; at the
first that went otherwise (the handler decrypted it itself, dropped what the
helper decrypted, or the item failed),
the page's transaction rolls back whole and the page is handled the usual
way, without the helper, which is then seeded again from the state this
process committed.  So what is stored is what handling the page alone would
have stored.

Why this is XMTP's own and not a :class:`core.protocol.PrepareStage`: the
helper works on a chain of states, page after page, each decrypted on the state
the page before it left, and its results hold only if the writer adopts the
helper's state at the end of each page; a batch stage the core may run on any
items, in any transaction, could not keep that promise.  What the core's
contract gives it is the rest: the door, and a result that travels on its item.

Set ``TESSERA_XMTP_DECRYPT_AHEAD=0`` to handle every page in this process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import TYPE_CHECKING

from core import contract
from core.batch import MicroBatch
from core.pipeline import Outcome, Unisolated
from core.records import OutcomeKind
from protocols.libraries import mls
from protocols.libraries.mls.ahead import DecryptAhead, Decrypted, OpenedPage
from protocols.xmtp import facts
from protocols.xmtp.errors import GroupUnknown
from protocols.xmtp.rereading import Suspect
from protocols.xmtp.settings import DECRYPT_AHEAD
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.interface import Page, ServerMessage

if TYPE_CHECKING:
    from core.settings import Settings

log = logging.getLogger("tessera.xmtp.ahead")

ENV = DECRYPT_AHEAD.env_key
#: The process's helper, shared by every database and group it syncs (started on first use).
HELPER = DecryptAhead()


#: ``process_one(message, decrypted)``: one payload through the door, with what the helper made of it.
ProcessOne = Callable[[ServerMessage, Decrypted | None], Outcome | None]


class _Diverged(Exception):
    """A payload went otherwise than the helper assumed: the page is handled without it."""


def enabled(settings: Settings) -> bool:
    """Whether the decrypt-ahead helper is on for the app whose core ``settings`` these are."""
    return bool(settings.sources.resolve(DECRYPT_AHEAD).value)


class GroupReader:
    """One group topic's catch-up through the helper (see the module docs)."""

    def __init__(self, runtime: contract.Runtime, group_id: bytes, helper: DecryptAhead | None = None):
        self.runtime = runtime
        self.group_id = group_id
        self.helper = HELPER if helper is None else helper
        self.adopted = 0  # payloads recorded as the helper decrypted them
        self.waited_s = 0.0  # for the helper's work on a page, once it was to be recorded

    def ready(self) -> bool:
        """Whether the helper is up (starting it if it is not): until it is, the catch-up handles its pages
        alone rather than wait for a new interpreter to start."""
        return self.helper.warm()

    def seed(self) -> None:
        """Start the helper from the state this process has committed."""
        with self.runtime.db.read():
            state = Vault.of_runtime(self.runtime).group(self.group_id)
        self.helper.seed(self.group_id, state)

    def submit(self, page: Page) -> Future[OpenedPage]:
        return self.helper.submit(self.group_id, [message.payload for message in page.messages])

    def close(self) -> None:
        self.helper.forget(self.group_id)

    def record(
        self,
        topic: str,
        page: Page,
        opened: Future[OpenedPage] | None,
        process_one: ProcessOne,
        run_alone: Callable[[Sequence[ServerMessage]], None],
    ) -> bool:
        """Record ``page``: what the helper opened in one transaction (each payload through
        ``process_one``, with what the helper decrypted it to), the rest, or all of it when the helper's
        work does not fit, through ``run_alone``.  Whether the helper must be seeded again before the next
        page."""
        began = time.perf_counter()
        try:
            found = opened.result() if opened is not None else None
        except BrokenProcessPool:
            log.warning("the decrypting helper process died; recording the page without it")
            found = None
        self.waited_s += time.perf_counter() - began
        if found is None or not self.helper.current(found) or found.stopped_at == 0:
            if page.messages:
                run_alone(page.messages)
            return bool(page.messages)
        chunk, rest = page.messages[: found.stopped_at], page.messages[found.stopped_at :]
        adopted = self._adopt(chunk, found, process_one)
        if adopted:
            self.adopted += sum(1 for decrypted in found.messages if decrypted is not None)
        else:
            run_alone(chunk)
        if rest:
            run_alone(rest)
        return not adopted or bool(rest)

    def _adopt(
        self,
        chunk: Sequence[ServerMessage],
        found: OpenedPage,
        process_one: ProcessOne,
    ) -> bool:
        db = self.runtime.db
        vault = Vault.of_runtime(self.runtime)
        name = vault.group_name(self.group_id)
        after = mls.restore(found.state) if found.state is not None else None
        try:
            # One transaction for the chunk however long it takes (a page: tens of milliseconds): a commit
            # in the middle would store keys the helper's state has already used, or lose ones it needs.
            with MicroBatch(db, max_items=len(chunk) + 2, max_ms=3_600_000) as batch:
                # The state the page starts from, read and opened once for the page, not once a payload.
                before = batch.run(partial(self._hold, vault), isolated=False)
                for message, decrypted in zip(chunk, found.messages, strict=True):
                    outcome = batch.run(partial(process_one, message, decrypted), isolated=False)
                    # The handler recorded the helper's plaintext exactly when it recorded a message and
                    # left the group state alone (it stages a state only when it decrypted by itself).
                    if recorded_a_message(outcome) != (decrypted is not None) or vault.state.staged(name) is not before:
                        raise _Diverged
                if after is not None:
                    vault.stage_group(self.group_id, after, self.runtime.clock.now_ms())
        except (_Diverged, Suspect, Unisolated, GroupUnknown):
            # A payload that failed is handled alone too (it had no savepoint here: the page rolls back whole),
            # and there the page stops before it (.rereading); so is a page of a group whose state is gone (the
            # handler says what that means, payload by payload).
            return False
        return True

    def _hold(self, vault: Vault) -> mls.GroupState:
        """The group's stored state, held in memory for the page's transaction (:meth:`Vault.hold_group`)."""
        state = vault.group(self.group_id)
        vault.hold_group(self.group_id, state, self.runtime.clock.now_ms())
        return state


def recorded_a_message(outcome: Outcome | None) -> bool:
    """Whether ``outcome`` is a handled item that recorded a message (what the helper decrypted is used)."""
    return (
        outcome is not None
        and outcome.kind is OutcomeKind.HANDLED
        and any(event.type == facts.MESSAGE_RECORDED for event in outcome.events)
    )


def reader_for(runtime: contract.Runtime, topic: str, first: Page) -> GroupReader | None:
    """A reader for a group topic with more than a page waiting, unless the helper is turned off."""
    if not (topic.startswith("g/") and first.has_more and first.messages and enabled(runtime.db.settings)):
        return None
    group_id = first.messages[0].group_id
    with runtime.db.read():
        if not Vault.of_runtime(runtime).has_group(group_id):
            return None  # nothing to seed the helper with: the handler says what is wrong, payload by payload
    return GroupReader(runtime, group_id)
