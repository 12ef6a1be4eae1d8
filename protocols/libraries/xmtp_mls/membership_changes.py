"""What a membership commit must change, worked out as libxmtp v1.10.0 works it out before committing.

libxmtp (``get_membership_update_intent`` and ``calculate_membership_changes_with_keypackages``
in crates/xmtp_mls/src/groups/mls_sync.rs, ``get_installation_diff`` in identity_updates.rs)
moves every inbox of the group, and each inbox being added, to the newest identity update the
node holds, records that sequence id in the membership extension, and derives the installations
to add and remove from the inbox's association state before and after: an added inbox brings all
its installations, a member's newly added installation is added, a revoked one removed, and a
removed inbox's installations all go.  Each installation to add needs a KeyPackage from the node
that passes the checks; those without one are listed as ``failed_installations`` instead.

The same diff is what a receiver expects of a membership commit (:mod:`.commit_checks`), so the
function that computes it, :func:`installation_diff`, serves both sides.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Protocol

import attrs

from protocols.libraries import mls
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.errors import InvalidMessage
from protocols.libraries.mls.group.state import GroupState as MlsGroupState
from protocols.libraries.mls.messages import KeyPackage
from protocols.libraries.xmtp_content.group_context import GroupMembership
from protocols.libraries.xmtp_identity import InboxState, Refused, check_key_package

from .context import group_context
from .errors import ChangeNotPermitted, InstallationsUnavailable, UnknownAddress, UnverifiedMember
from .membership import replay
from .node import UpdateLog


class NodeAnswers(Protocol):
    """What planning a membership change asks of the node: :class:`~.node.XmtpNode` itself, or a client's
    record of its answers (so the commit can be built inside a transaction, the network used before it)."""

    def inbox_id_for(self, address: str) -> str | None: ...

    def identity_updates(self, inbox_ids: list[str]) -> dict[str, list[UpdateLog]]: ...

    def key_packages(self, installation_keys: list[bytes]) -> dict[bytes, bytes]: ...


@attrs.frozen
class InstallationDiff:
    """The installations a change of the membership map adds and removes (installation keys)."""

    added: frozenset[bytes]
    removed: frozenset[bytes]


@attrs.frozen
class MembershipChange:
    """One membership commit, planned.

    Attributes:
        membership: the membership extension after it.
        key_packages: the KeyPackage of each installation it adds.
        removed_leaves: the leaves of the installations it removes.
        added_inboxes, removed_inboxes: the inboxes it adds to and drops from the map.
    """

    membership: GroupMembership
    key_packages: tuple[KeyPackage, ...]
    removed_leaves: tuple[int, ...]
    added_inboxes: tuple[str, ...]
    removed_inboxes: tuple[str, ...]


def _state_at(inbox_id: str, logs: list[UpdateLog], sequence_id: int | None) -> InboxState | None:
    """The inbox at a membership map's sequence id; 0 (libxmtp's creator before any commit) counts as none."""
    return None if not sequence_id else replay(inbox_id, logs, sequence_id)


def _keys(state: InboxState | None) -> frozenset[bytes]:
    return frozenset() if state is None else state.installation_keys


def installation_diff(
    logs: Mapping[str, list[UpdateLog]], old: Mapping[str, int], new: Mapping[str, int]
) -> InstallationDiff:
    """The installations moving from membership map ``old`` to ``new`` adds and removes, given each inbox's
    identity updates (``logs``): libxmtp's expected diff."""
    added: set[bytes] = set()
    removed: set[bytes] = set()
    for inbox_id, sequence_id in new.items():
        if old.get(inbox_id) == sequence_id:
            continue
        before = _keys(_state_at(inbox_id, logs.get(inbox_id, []), old.get(inbox_id)))
        after = _keys(_state_at(inbox_id, logs.get(inbox_id, []), sequence_id))
        added |= after - before
        removed |= before - after
    for inbox_id in set(old) - set(new):
        # a removed inbox takes every installation it had at its recorded sequence id (all it has, at 0)
        removed |= _keys(replay(inbox_id, logs.get(inbox_id, []), old[inbox_id] or None))
    return InstallationDiff(frozenset(added), frozenset(removed))


def resolve_addresses(node: NodeAnswers, addresses: Iterable[str]) -> list[str]:
    """The inbox of each Ethereum address, as the node knows it (:class:`UnknownAddress` for one it does not)."""
    inboxes = []
    for address in addresses:
        inbox_id = node.inbox_id_for(address.lower())
        if inbox_id is None:
            raise UnknownAddress(
                f"no XMTP inbox is associated with {address}: its owner has to register with an XMTP client first"
            )
        inboxes.append(inbox_id)
    return inboxes


def plan_membership_change(
    node: NodeAnswers,
    state: MlsGroupState,
    *,
    add: Iterable[str] = (),
    remove: Iterable[str] = (),
    now: int | None = None,
) -> MembershipChange | None:
    """The commit that adds inboxes ``add``, drops inboxes ``remove`` and brings every other member's
    installations up to its newest identity update; None when there is nothing to change."""
    old = group_context(state).membership
    to_add = [inbox_id for inbox_id in dict.fromkeys(add) if inbox_id not in old.members]
    to_remove = set(remove)
    logs = node.identity_updates(sorted({*old.members, *to_add}))
    members = _moved_map(logs, old.members, to_add, to_remove)
    diff = installation_diff(logs, old.members, members)
    own = bytes(state.own_leaf_node.signature_key)
    in_tree = {key: leaf for leaf, key in mls.member_signature_keys(state).items()}
    wanted = sorted(key for key in diff.added if key != own and key not in in_tree)
    key_packages, failed = _fetch_key_packages(node, wanted, _owners(logs, old.members, members), now=now)
    if to_add and not key_packages and failed:
        raise InstallationsUnavailable(
            f"no installation of {', '.join(to_add)} has a KeyPackage on the node that passes the checks: "
            "they have to open their XMTP app (which uploads a fresh one) before they can be added"
        )
    failed_installations = (set(old.failed_installations) | set(failed)) - diff.removed
    removed_keys = diff.removed - set(old.failed_installations)
    if own in removed_keys:
        raise ChangeNotPermitted(
            "this installation was revoked from its inbox: it cannot commit its own removal, another member has to"
        )
    removed_leaves = tuple(sorted(in_tree[key] for key in removed_keys if key in in_tree))
    membership = GroupMembership(members, tuple(sorted(failed_installations)))
    if membership == old and not key_packages and not removed_leaves:
        return None
    return MembershipChange(
        membership,
        tuple(key_packages),
        removed_leaves,
        tuple(inbox_id for inbox_id in to_add if inbox_id in members),
        tuple(sorted(to_remove & set(old.members))),
    )


def _moved_map(
    logs: Mapping[str, list[UpdateLog]], old: Mapping[str, int], add: list[str], remove: set[str]
) -> dict[str, int]:
    """The membership map with every member and each added inbox at its newest identity update, less ``remove``."""
    members = dict(old)
    for inbox_id in [*old, *add]:
        latest = max((log.sequence_id for log in logs.get(inbox_id, [])), default=None)
        if latest is None:
            raise UnverifiedMember(f"the node holds no identity update of inbox {inbox_id}")
        members[inbox_id] = max(latest, members.get(inbox_id, 0))
    return {inbox_id: sequence_id for inbox_id, sequence_id in members.items() if inbox_id not in remove}


def _owners(logs: Mapping[str, list[UpdateLog]], old: Mapping[str, int], new: Mapping[str, int]) -> dict[bytes, str]:
    """The inbox of each installation an inbox whose sequence id moved has at its new one."""
    return {
        key: inbox_id
        for inbox_id, sequence_id in new.items()
        if old.get(inbox_id) != sequence_id
        for key in _keys(_state_at(inbox_id, logs.get(inbox_id, []), sequence_id))
    }


def _fetch_key_packages(
    node: NodeAnswers, installation_keys: list[bytes], owners: Mapping[bytes, str], *, now: int | None
) -> tuple[list[KeyPackage], list[bytes]]:
    """The checked KeyPackage of each installation that has one (its credential naming the inbox ``owners``
    says the installation belongs to), and the installations that have none."""
    fetched = node.key_packages(installation_keys)
    moment = int(time.time()) if now is None else now
    found: list[KeyPackage] = []
    failed: list[bytes] = []
    for key in installation_keys:
        data = fetched.get(key)
        try:
            if data is None:
                raise Refused("the node holds no KeyPackage for it", reason="missing")
            checked = check_key_package(data, now=moment)
            if checked.installation_key != key or checked.inbox_id != owners.get(key):
                raise Refused("the KeyPackage belongs to another installation", reason="mismatch")
        except Refused:
            failed.append(key)
            continue
        found.append(_key_package(checked.raw))
    return found, failed


def _key_package(data: bytes) -> KeyPackage:
    """A checked KeyPackage as the engine takes it: uploaded bare (as libxmtp does) or as an MLSMessage."""
    try:
        return decode(KeyPackage, data)
    except InvalidMessage:
        return mls.key_package_from_bytes(data, verify=False)
