"""The private profile's publisher: intents built with Tessera's own MLS profile and sent to ``tessera serve``.

The publish pass (:mod:`.publishing`) calls it for each intent's three steps; what it adds to them:

* **build**: an add needs one KeyPackage for every verified installation of each address, fetched (and
  so used up on the server) before the build's transaction and handed to ``xmtp.prepare``, which builds
  the message or commit for the group's current epoch (``mls``), keeping the state with a commit pending
  and one welcome per invitee;
* **send**: the group is joined on the server first (it lets only members read and write a group), then
  the message or a welcome goes out through the delivery service, whose receipt carries the server's id.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from core import contract
from core.errors import InvalidInput
from core.records import Result
from protocols.libraries import mls
from protocols.xmtp import facts, intent_machine, members
from protocols.xmtp.errors import InvalidBinding, UnknownPeer, WrongIntentState
from protocols.xmtp.identity import InstallationBinding, verify
from protocols.xmtp.intent_machine import Intent, IntentBook
from protocols.xmtp.kinds import IntentKind
from protocols.xmtp.publishing import built_by
from protocols.xmtp.state import BINDING_EXTENSION, Vault
from protocols.xmtp.transport.interface import DeliveryService, Receipt


class PrivatePublisher:
    """:class:`~protocols.xmtp.publishing.ProfilePublisher` over ``tessera serve``'s delivery service."""

    def __init__(self, service: DeliveryService):
        self.service = service

    def build(self, runtime: contract.Runtime, intent: Intent) -> Intent | None:
        self.service.join(intent.group_id)
        params: dict[str, Any] = {"intent": intent.id}
        if intent.kind is IntentKind.ADD_MEMBERS:
            addresses = json.loads(intent.request)["addresses"]
            params["key_packages"] = [facts.b64(kp) for kp in invitee_key_packages(self.service, addresses)]
        return built_by(runtime, "xmtp.prepare", params)

    def send(self, group_id: bytes, payload: bytes, *, recipient: str | None = None) -> Receipt:
        if recipient is None:
            # A message the ``send`` command built in its own transaction skips :meth:`build` and its join.
            self.service.join(group_id)
        return self.service.send(group_id, payload, recipient=recipient)


def build(ctx: contract.Context, intent: Intent, key_packages: list[str]) -> Result:
    """Intent ``intent`` built for the group's current epoch (``key_packages``: base64, for adds)."""
    vault = Vault.in_context(ctx)
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
    return build(ctx, intent, list(params.get("key_packages") or []))


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


def invitee_key_packages(service: DeliveryService, addresses: list[str]) -> list[bytes]:
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
