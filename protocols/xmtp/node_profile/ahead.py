"""The node profile's catch-up of a group with its messages decrypted a page ahead, in the helper process the
private profile uses (:mod:`protocols.xmtp.ahead`, :mod:`protocols.libraries.mls.ahead`).

While the sync fetches the next page from the node and records this one, the helper runs the MLS engine
over the pages it was given, on a copy of the group's committed state.  A chunk the helper opened (the page
up to its first commit or proposal) is recorded in one transaction: each message goes through the core's
door as always, with what the helper made of it as the item's prepared result (``WorkItem.prepared``, a
:class:`~protocols.libraries.mls.ahead.Decrypted`), which the handler hands to ``JoinedGroup.read`` instead
of decrypting; the cursor moves with each message, and the state the helper ended with is staged once,
before COMMIT.  At the first message that went otherwise than the helper assumed (the handler decrypted
by itself or changed the state, recorded a message the helper could not open, or failed), the chunk's
transaction rolls back whole, the chunk is handled the usual way (:func:`.sync._process_page`), and the
helper is seeded again from what was committed.  So what is stored is what handling the page alone would
have stored; the helper's copy lives in memory only and is dropped when the topic's catch-up ends.

``TESSERA_XMTP_DECRYPT_AHEAD=0`` turns it off, as on the private profile.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from functools import partial

from core import contract
from core.batch import MicroBatch
from core.pipeline import Outcome
from protocols.libraries import mls
from protocols.libraries.mls.ahead import DecryptAhead, Decrypted, OpenedPage
from protocols.xmtp import ahead
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.node_records import NodeGroupMessage

#: ``record_one(message, decrypted)``: one message through the door with its cursor move (None: it failed).
RecordOne = Callable[[NodeGroupMessage, Decrypted | None], Outcome | None]
#: ``run_alone(messages)``: messages handled the usual way, without the helper.
RunAlone = Callable[[Sequence[NodeGroupMessage]], None]


class _Diverged(Exception):
    """A message went otherwise than the helper assumed: the chunk is handled without it."""


class NodeGroupReader:
    """One group topic's catch-up through the helper (see the module docs).

    Attributes:
        adopted: messages recorded as the helper decrypted them.
        recorded: messages recorded in the chunks adopted (the sync's count).
        waited_s: time spent waiting for the helper's work on a page once it was to be recorded.
    """

    def __init__(self, runtime: contract.Runtime, group_id: bytes, helper: DecryptAhead | None = None):
        self.runtime = runtime
        self.group_id = group_id
        self.helper = ahead.HELPER if helper is None else helper
        self.adopted = 0
        self.recorded = 0
        self.waited_s = 0.0

    def seed(self) -> None:
        """Start the helper from the state this process has committed."""
        with self.runtime.db.read():
            state = Vault.of_runtime(self.runtime).group(self.group_id)
        self.helper.seed(self.group_id, state)

    def submit(self, messages: Sequence[NodeGroupMessage]) -> Future[OpenedPage]:
        return self.helper.submit(self.group_id, [message.data for message in messages])

    def close(self) -> None:
        self.helper.forget(self.group_id)

    def record(
        self,
        messages: Sequence[NodeGroupMessage],
        opened: Future[OpenedPage],
        record_one: RecordOne,
        run_alone: RunAlone,
    ) -> bool:
        """Record ``messages`` (a page): the chunk the helper opened in one transaction, the rest (from the
        first commit or proposal on), or all of it when the helper's work does not fit, through
        ``run_alone``.  Whether the helper must be seeded again before the next page."""
        began = time.perf_counter()
        try:
            found: OpenedPage | None = opened.result()
        except BrokenProcessPool:
            found = None  # the helper died: this page without it, and the next seed starts another
        self.waited_s += time.perf_counter() - began
        if found is None or not self.helper.current(found) or found.stopped_at == 0:
            if messages:
                run_alone(messages)
            return bool(messages)
        chunk, rest = messages[: found.stopped_at], messages[found.stopped_at :]
        adopted = self._adopt(chunk, found, record_one)
        if adopted:
            self.adopted += sum(1 for decrypted in found.messages if decrypted is not None)
            self.recorded += len(chunk)
        else:
            run_alone(chunk)
        if rest:
            run_alone(rest)
        return not adopted or bool(rest)

    def _adopt(self, chunk: Sequence[NodeGroupMessage], found: OpenedPage, record_one: RecordOne) -> bool:
        vault = Vault.of_runtime(self.runtime)
        name = vault.group_name(self.group_id)
        after = mls.restore(found.state) if found.state is not None else None
        try:
            # One transaction for the chunk however long it takes: a commit in the middle would store keys
            # the helper's state has already used, or lose ones it needs.
            with MicroBatch(self.runtime.db, max_items=len(chunk) + 1, max_ms=3_600_000) as batch:
                for message, decrypted in zip(chunk, found.messages, strict=True):
                    outcome = batch.run(partial(record_one, message, decrypted), isolated=False)
                    # The handler read the helper's plaintext exactly when it recorded a message and left the
                    # group state alone (it stages a state only when it decrypted, or applied, by itself).
                    if (
                        outcome is None
                        or ahead.recorded_a_message(outcome) != (decrypted is not None)
                        or vault.state.staged(name) is not None
                    ):
                        raise _Diverged
                if after is not None:
                    vault.stage_group(self.group_id, after, self.runtime.clock.now_ms())
        except _Diverged:
            return False
        return True


def reader_for(runtime: contract.Runtime, group_id: bytes, more_waiting: bool) -> NodeGroupReader | None:
    """A reader for a group with more than a page waiting, unless the helper is turned off."""
    if not (more_waiting and ahead.enabled(runtime.db.settings)):
        return None
    with runtime.db.read():
        if not Vault.of_runtime(runtime).has_group(group_id):
            return None
    return NodeGroupReader(runtime, group_id)
