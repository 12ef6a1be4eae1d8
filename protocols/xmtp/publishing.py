"""Turning intents into MLS messages and getting them to the server (seed 002's publish step).

For each group, intents go in the order they were made.  An intent may be
built when every earlier one of its group is final (COMMITTED or ERROR) or
is a message already published: so a commit is never built on top of
another commit of ours that is not confirmed yet, and a message made after a
commit goes out in the epoch that commit opens.

One intent takes three steps, none holding a transaction across the network
(the transitions are :mod:`.intent_machine`'s):

1. build (one transaction): the concrete message for the group's current
   epoch, its hash, and for a commit the pending state and the welcomes, are
   recorded (``intent_prepared``).  A message whose turn it is already is
   built by ``send`` itself, in the transaction that makes it (so a message
   reaches PUBLISHED in two transactions); any other intent by
   ``xmtp.prepare`` here.  An intent built before (a crash after step 1) is
   sent as it was.
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
Adding members needs the invitees' KeyPackages, fetched (and so used up on
the server) just before step 1.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from core import contract
from core.errors import InvalidInput
from core.records import Result
from protocols.libraries import mls
from protocols.libraries.delivery.codes import ErrorCode
from protocols.xmtp import facts, intent_machine, members, queries
from protocols.xmtp.errors import InvalidBinding, ServiceRefused, ServiceUnavailable, UnknownPeer, WrongIntentState
from protocols.xmtp.identity import InstallationBinding, verify
from protocols.xmtp.intent_machine import Intent, IntentBook
from protocols.xmtp.kinds import IntentKind, IntentState
from protocols.xmtp.node_profile import sending
from protocols.xmtp.state import BINDING_EXTENSION, Vault
from protocols.xmtp.transport.interface import Publisher

log = logging.getLogger("tessera.xmtp.publish")

#: Server refusals a later try may get past (the group's daily quota, a full store, the store busy).
RETRYABLE_CODES = frozenset(
    {ErrorCode.RATE_LIMITED, ErrorCode.STORAGE_FULL, ErrorCode.UNAVAILABLE, ErrorCode.INTERNAL_ERROR}
)


# --- step 1: build ----------------------------------------------------------------------------


def build(
    ctx: contract.Context, intent: Intent, key_packages: list[str], answers: dict[str, Any] | None = None
) -> Result:
    """Intent ``intent`` built for the group's current epoch (``key_packages``: base64, for adds; on the node
    profile ``answers``: the node's, for a membership change)."""
    vault = Vault.in_context(ctx)
    if vault.has_inbox() and intent.kind is IntentKind.SEND_MESSAGE:
        return sending.build(ctx, intent)  # a libxmtp group: framed as libxmtp frames its messages
    if vault.has_inbox():
        from protocols.xmtp.node_profile import committing  # loads xmtp_mls: the node profile's only

        return committing.build(ctx, intent, answers)  # a commit libxmtp makes for the same change
    state = vault.group(intent.group_id)
    request = json.loads(intent.request)
    welcomes: list[dict[str, str]] = []
    if intent.kind is IntentKind.SEND_MESSAGE:
        payload, new_state = mls.encrypt_application(state, request["text"].encode())
    else:
        payload, new_state, welcomes = _commit(state, intent, request, key_packages)
    digest = hashlib.sha256(payload).digest()
    _, change = intent_machine.prepare(intent, state.epoch, payload, digest, welcomes, ctx.now_ms)
    return Result(events=change.events, intents=[*change.writes, vault.group_intent(intent.group_id, new_state)])


def command_prepare(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Build intent ``intent``'s message for the current epoch (``key_packages``: base64 list, for adds)."""
    intent_id = str(params.get("intent"))
    try:
        intent = intent_machine.unbuilt(IntentBook(ctx.db).get(intent_id), intent_id)
    except WrongIntentState:
        return Result(duplicate=True)  # built before a crash, read back, or given up meanwhile
    return build(ctx, intent, list(params.get("key_packages") or []), params.get("answers"))


def _commit(
    state: mls.GroupState, intent: Intent, request: dict[str, Any], key_packages: list[str]
) -> tuple[bytes, mls.GroupState, list[dict[str, str]]]:
    """The commit of an add, remove or key update, our state with it pending, and one welcome per invitee."""
    if intent.kind is IntentKind.KEY_UPDATE:
        result = mls.commit(state, self_update=True)
        return result.message, result.pending_state, []
    if intent.kind is IntentKind.REMOVE_MEMBERS:
        gone = sorted({i for a in request["addresses"] for i in members.installations_of(state, a)})
        if not gone:
            raise InvalidInput("none of the addresses to remove is a member any more")
        result = mls.commit(state, remove=gone)
        return result.message, result.pending_state, []
    packages = [mls.key_package_from_bytes(facts.unb64(kp)) for kp in key_packages]
    present = set(mls.member_credentials(state).values())
    packages = [kp for kp in packages if mls.credential_string(kp.leaf_node.credential) not in present]
    if not packages:
        raise InvalidInput("every installation of the addresses to add is a member already")
    result = mls.commit(state, add=packages)
    shared = next(iter(result.welcomes.values()))
    welcomes = [
        {
            "installation": mls.credential_string(kp.leaf_node.credential),
            "welcome": facts.b64(mls.welcome_for(shared, kp)),
        }
        for kp in packages
    ]
    return result.message, result.pending_state, welcomes


def invitee_key_packages(service: Publisher, addresses: list[str]) -> list[bytes]:
    """One KeyPackage for every verified installation of each address (each used up on the server).

    A binding that does not verify, or a KeyPackage that is not its
    installation's or lacks the installation's binding, is skipped: the
    server is not trusted to say who belongs to an account.
    """
    found: list[bytes] = []
    for address in addresses:
        installations = [
            b.installation for b in service.fetch_identity(address) if _bound(b.binding, address, b.installation)
        ]
        if not installations:
            raise UnknownPeer(f"{address} has no verified installation on the server (has it registered?)")
        for installation in installations:
            data = service.fetch_key_package(installation)
            if _key_package_of(data, installation, address):
                found.append(data)
    return found


def _bound(binding: bytes, address: str, installation: str) -> bool:
    try:
        verify(InstallationBinding.from_bytes(binding), address=address, installation=installation)
    except (InvalidBinding, InvalidInput):
        return False
    return True


def _key_package_of(data: bytes, installation: str, address: str) -> bool:
    try:
        kp = mls.key_package_from_bytes(data)
    except mls.MlsError:
        return False
    binding = next((e.extension_data for e in kp.leaf_node.extensions if e.extension_type == BINDING_EXTENSION), None)
    if mls.credential_string(kp.leaf_node.credential) != installation or binding is None:
        return False
    return members.checked_address(bytes(binding), installation).lower() == address.lower()


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


def publish_pass(runtime: contract.Runtime, service: Publisher) -> int:
    """One pass: for every group with work, its next intent through all three steps; then ready welcomes."""
    done = 0
    now_ns = runtime.clock.now_ms() * 1_000_000
    with runtime.db.read():
        due = IntentBook(runtime.db).groups()
    for group_id in due:
        done += _publish_group(runtime, service, group_id, now_ns)
    return done + send_welcomes(runtime, service)


def _publish_group(runtime: contract.Runtime, service: Publisher, group_id: bytes, now_ns: int) -> int:
    """A group's intents in order until one must wait (a commit to confirm, a retry not due, a failure)."""
    done = 0
    while True:
        with runtime.db.read():
            book = IntentBook(runtime.db)
            intent = book.next_due(group_id, now_ns)
        if intent is None:
            return done
        published = publish_intent(runtime, service, intent)
        done += 1
        if not published or intent.kind.is_commit or intent.id == book.open_ids(group_id)[-1]:
            return done  # it must be confirmed first, or it failed, or it was the group's last


def publish_intent(runtime: contract.Runtime, service: Publisher, intent: Intent) -> bool:
    """Steps 1 to 3 for one intent; a failure is recorded on the intent, never raised.  Whether it is
    PUBLISHED now."""
    try:
        # Every network step that can fail before the send comes before step 1: so an intent that is built
        # may be on the server (only a crash or the send itself came between), and only an unbuilt one is
        # given up after MAX_ATTEMPTS outages and the retry horizon (intent_machine.fail_attempt).
        service.join(intent.group_id)
        if not intent.prepared:
            built = _build(runtime, service, intent)
            if built is None:
                return False
            intent = built
        receipt = service.send(intent.group_id, intent.payload)
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


def _build(runtime: contract.Runtime, service: Publisher, intent: Intent) -> Intent | None:
    """Step 1 in a transaction of its own (after the KeyPackages of an add are fetched); the intent as
    built, or None when it is no longer one to build."""
    params: dict[str, Any] = {"intent": intent.id}
    with runtime.db.read():
        node_profile = Vault.of_runtime(runtime).has_inbox()
    if node_profile and _asks_node(intent.kind):
        params["answers"] = _node_answers(runtime, service, intent)
    elif intent.kind is IntentKind.ADD_MEMBERS:
        addresses = json.loads(intent.request)["addresses"]
        params["key_packages"] = [facts.b64(kp) for kp in invitee_key_packages(service, addresses)]
    runtime.run_command("xmtp.prepare", params)
    with runtime.db.read():
        built = IntentBook(runtime.db).get(intent.id)
    if built is None or built.state is not IntentState.TO_SEND or not built.prepared:
        return None
    return built


def _asks_node(kind: IntentKind) -> bool:
    """Whether a node-profile intent of ``kind`` is built from the node's answers (a membership change)."""
    from protocols.xmtp.node_profile.committing import ASKS_NODE

    return kind in ASKS_NODE


def _node_answers(runtime: contract.Runtime, service: Publisher, intent: Intent) -> dict[str, Any]:
    """What the node says of the members a libxmtp group's membership change names (asked before its build)."""
    from protocols.xmtp.node_profile import committing
    from protocols.xmtp.node_profile.publishing import NodePublisher

    assert isinstance(service, NodePublisher)  # a node-profile database publishes through its node
    return committing.ask_node(runtime, service.node, intent)


def _failed(runtime: contract.Runtime, intent: Intent, error: str, *, final: bool) -> None:
    log.info("intent %s (%s) failed: %s", intent.id, intent.kind.name, error)
    runtime.run_command("xmtp.publish_failed", {"intent": intent.id, "error": error, "final": final})


def send_welcomes(runtime: contract.Runtime, service: Publisher) -> int:
    """Send every welcome whose commit is confirmed; one that fails stays ready for the next pass."""
    with runtime.db.read():
        ready = queries.ready_welcomes(runtime.db)
    sent = 0
    for intent_id, installation, group_id, welcome in ready:
        try:
            service.send(group_id, welcome, recipient=installation)
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
