"""Turning intents into MLS messages and getting them to the server (seed 002's publish step).

For each group, intents go in the order they were made.  An intent may be
built when every earlier one of its group is final (COMMITTED or ERROR) or
is a message already published: so a commit is never built on top of
another commit of ours that is not confirmed yet, and a message made after a
commit goes out in the epoch that commit opens.

One intent takes three steps, none holding a transaction across the network
(the transitions are :mod:`.intent_machine`'s); the database's profile supplies
its publisher (:class:`ProfilePublisher`) for the first two, so this pass is
the same for both:

1. build (one transaction, after what the network must tell first: an
   invitee's KeyPackages on the private profile, the node's answers on the
   node profile): the concrete message for the group's current epoch, its
   hash, and for a commit the pending state and the welcomes, are recorded
   (``intent_prepared``).  A message whose turn it is already is built by
   ``send`` itself, in the transaction that makes it (so a message reaches
   PUBLISHED in two transactions); any other intent by the profile's build
   command here.  An intent built before (a crash after step 1) is sent as
   it was.
2. the send, outside any transaction;
3. ``xmtp.published`` or ``xmtp.publish_failed`` (one transaction each):
   PUBLISHED, or the failure counted and the next try scheduled with
   backoff, ERROR with the reason after ``MAX_ATTEMPTS`` and the core's
   ``outgoing_retry_horizon_ms`` (a day) or at once
   when the server refuses the message itself.  Once step 1 is done an
   outage never ends the intent: the send may have reached the server
   (its reply lost), so it is tried again, as built, until the server
   answers (the server stores a payload sent twice once).

Welcomes leave only once their commit is COMMITTED (read back by sync).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from core import contract
from core.errors import InvalidInput
from core.records import Result
from protocols.libraries import mls
from protocols.libraries.delivery.codes import ErrorCode
from protocols.xmtp import facts, intent_machine, queries
from protocols.xmtp.errors import ServiceRefused, ServiceUnavailable, UnknownPeer, WrongIntentState
from protocols.xmtp.intent_machine import Intent, IntentBook
from protocols.xmtp.kinds import IntentState
from protocols.xmtp.transport.interface import Receipt

log = logging.getLogger("tessera.xmtp.publish")

#: Server refusals a later try may get past (the group's daily quota, a full store, the store busy).
RETRYABLE_CODES = frozenset(
    {ErrorCode.RATE_LIMITED, ErrorCode.STORAGE_FULL, ErrorCode.UNAVAILABLE, ErrorCode.INTERNAL_ERROR}
)


# --- step 1: build ----------------------------------------------------------------------------


class ProfilePublisher(Protocol):
    """What the publish pass asks of the database's profile (:meth:`.connection.XmtpMember.publisher`): the
    private profile's :class:`~.private_publishing.PrivatePublisher` or the node profile's
    :class:`~.node_profile.publishing.NodePublisher`."""

    def build(self, runtime: contract.Runtime, intent: Intent) -> Intent | None:
        """Step 1: whatever the network must tell first (an invitee's KeyPackages, the node's answers), then
        the intent built for the group's current epoch in a transaction of its own; the intent as built, or
        None when it is no longer one to build.  Raises what a try fails with (see :func:`publish_intent`)."""
        ...

    def send(self, group_id: bytes, payload: bytes, *, recipient: str | None = None) -> Receipt:
        """Step 2: a built message or commit to its group, or (``recipient``) a welcome to an installation."""
        ...


def built_by(runtime: contract.Runtime, command: str, params: dict[str, Any]) -> Intent | None:
    """Run the profile's build ``command`` (``params`` name the intent) and read the intent back: as built, or
    None when it was not built (read back, rebuilt or given up meanwhile)."""
    runtime.run_command(command, params)
    with runtime.db.read():
        built = IntentBook(runtime.db).get(str(params["intent"]))
    if built is None or built.state is not IntentState.TO_SEND or not built.prepared:
        return None
    return built


# --- step 3: the outcome ---------------------------------------------------------------------


def command_published(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Intent ``intent`` whose message hashes to ``hash`` is stored on the server as ``server_id``."""
    intent_id = str(params.get("intent"))
    book = IntentBook(ctx.db)
    try:
        change = intent_machine.publish(
            book.get(intent_id), intent_id, bytes.fromhex(str(params.get("hash"))), str(params["server_id"]), ctx.now_ms
        )
    except WrongIntentState:
        return Result(duplicate=True)  # read back first, or rebuilt meanwhile (the new message goes out next)
    return Result(events=change.events, intents=change.writes)


def command_publish_failed(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Count a failed try of intent ``intent`` (``error``; ``final`` when no retry can help)."""
    intent_id = str(params.get("intent"))
    book = IntentBook(ctx.db)
    error = str(params.get("error") or "unknown error")
    try:
        change = intent_machine.fail_attempt(
            book,
            book.get(intent_id),
            intent_id,
            error,
            bool(params.get("final")),
            ctx.now_ms,
            ctx.db.settings.outgoing_retry_horizon_ms,
        )
    except WrongIntentState:
        return Result(duplicate=True)  # settled meanwhile (read back, or another cause ended it)
    return Result(events=change.events, intents=change.writes)


def command_welcome_sent(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """The welcome of intent ``intent`` for ``installation`` is on the server."""
    group_id = bytes.fromhex(str(params.get("group")))
    data = {"intent": params["intent"], "installation": params["installation"]}
    return Result(
        events=[facts.fact(facts.WELCOME_SENT, group_id, ctx.now_ms, data, params["intent"], params["installation"])]
    )


# --- the job ---------------------------------------------------------------------------------


def publish_pass(runtime: contract.Runtime, publisher: ProfilePublisher) -> int:
    """One pass: for every group with work, its next intent through all three steps; then ready welcomes."""
    done = 0
    now_ns = runtime.clock.now_ms() * 1_000_000
    with runtime.db.read():
        due = IntentBook(runtime.db).groups()
    for group_id in due:
        done += _publish_group(runtime, publisher, group_id, now_ns)
    return done + send_welcomes(runtime, publisher)


def _publish_group(runtime: contract.Runtime, publisher: ProfilePublisher, group_id: bytes, now_ns: int) -> int:
    """A group's intents in order until one must wait (a commit to confirm, a retry not due, a failure)."""
    done = 0
    while True:
        with runtime.db.read():
            book = IntentBook(runtime.db)
            intent = book.next_due(group_id, now_ns)
        if intent is None:
            return done
        published = publish_intent(runtime, publisher, intent)
        done += 1
        if not published or intent.kind.is_commit or intent.id == book.open_ids(group_id)[-1]:
            return done  # it must be confirmed first, or it failed, or it was the group's last


def publish_intent(runtime: contract.Runtime, publisher: ProfilePublisher, intent: Intent) -> bool:
    """Steps 1 to 3 for one intent; a failure is recorded on the intent, never raised.  Whether it is
    PUBLISHED now."""
    try:
        # Every network step that can fail before the send comes before step 1 (the profile's build does
        # them first): so an intent that is built may be on the server (only a crash or the send itself came
        # between), and only an unbuilt one is given up after MAX_ATTEMPTS outages and the retry horizon
        # (intent_machine.fail_attempt).
        if not intent.prepared:
            built = publisher.build(runtime, intent)
            if built is None:
                return False
            intent = built
        receipt = publisher.send(intent.group_id, intent.payload)
    except ServiceUnavailable as exc:
        _failed(runtime, intent, str(exc), final=False)
        return False
    except ServiceRefused as exc:
        _failed(runtime, intent, str(exc), final=exc.code not in RETRYABLE_CODES)
        return False
    except (InvalidInput, UnknownPeer, mls.MlsError) as exc:
        _failed(runtime, intent, str(exc), final=True)
        return False
    assert intent.message_hash is not None
    params = {"intent": intent.id, "hash": intent.message_hash.hex(), "server_id": receipt.message_id}
    return bool(runtime.run_command("xmtp.published", params).events)


def _failed(runtime: contract.Runtime, intent: Intent, error: str, *, final: bool) -> None:
    log.info("intent %s (%s) failed: %s", intent.id, intent.kind.name, error)
    runtime.run_command("xmtp.publish_failed", {"intent": intent.id, "error": error, "final": final})


def send_welcomes(runtime: contract.Runtime, publisher: ProfilePublisher) -> int:
    """Send every welcome whose commit is confirmed; one that fails stays ready for the next pass."""
    with runtime.db.read():
        ready = queries.ready_welcomes(runtime.db)
    sent = 0
    for intent_id, installation, group_id, welcome in ready:
        try:
            publisher.send(group_id, welcome, recipient=installation)
        except ServiceUnavailable as exc:
            log.info("welcome of %s to %s waits: %s", intent_id, installation[:16], exc)
            continue
        except ServiceRefused as exc:
            if exc.code != ErrorCode.RECIPIENT_IS_MEMBER:
                log.warning("welcome of %s to %s refused: %s", intent_id, installation[:16], exc)
                continue
        runtime.run_command(
            "xmtp.welcome_sent", {"intent": intent_id, "installation": installation, "group": group_id.hex()}
        )
        sent += 1
    return sent
