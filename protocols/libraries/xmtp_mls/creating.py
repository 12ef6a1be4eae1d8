"""Creating groups and DMs in libxmtp's form, so that libxmtp members recognise them as their own.

As libxmtp v1.10.0 creates them (``create_and_insert``, ``create_dm_and_insert`` and
``build_group_config`` in crates/xmtp_mls/src/groups/mod.rs): an MLS group of suite 3 with a random
16-byte id, whose GroupContext carries, in this order, the immutable metadata (conversation type,
creator; a DM's two members), the mutable metadata (name, description, image, app data; the creator
as super admin of a group, nobody of a DM), the membership map holding the creator at sequence id
0, the permission policies (a preset, or the DM's), and ``required_capabilities`` naming libxmtp's
four extensions, ``last_resort`` and ``application_id``, the GroupContextExtensions proposal and
basic credentials.  The creator's leaf is the installation's, as in its KeyPackages.  Members are
then added by one commit (:meth:`.groups.JoinedGroup.add_members`), as libxmtp adds them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence

from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.group.create import create_group as create_mls_group
from protocols.libraries.mls.group.state import GroupConfig
from protocols.libraries.mls.messages import (
    ApplicationId,
    CredentialType,
    Extension,
    Lifetime,
    RequiredCapabilities,
)
from protocols.libraries.mls.messages.registries import LAST_RESORT_EXTENSION_TYPE, ExtensionType, ProposalType
from protocols.libraries.xmtp_content import group_context as ids
from protocols.libraries.xmtp_content import policies as presets
from protocols.libraries.xmtp_content.group_context import (
    ConversationType,
    GroupMembership,
    GroupMetadata,
    MutableMetadata,
)
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_content.policies import PolicySet

from .errors import ChangeNotPermitted, UnknownPermissions
from .groups import JoinedGroup
from .installation import Installation
from .key_packages import LIFETIME_MARGIN_SECONDS, LIFETIME_SECONDS, installation_identity
from .membership_changes import resolve_addresses
from .node import XmtpNode
from .profile import CAPABILITIES, CIPHER_SUITE, MAX_PAST_EPOCHS

#: What every member of a libxmtp group must support, in libxmtp's order.
REQUIRED_EXTENSIONS = (
    ids.GROUP_MEMBERSHIP_EXTENSION_TYPE,
    ids.MUTABLE_METADATA_EXTENSION_TYPE,
    ids.GROUP_PERMISSIONS_EXTENSION_TYPE,
    ids.IMMUTABLE_METADATA_EXTENSION_TYPE,
    LAST_RESORT_EXTENSION_TYPE,
    ExtensionType.APPLICATION_ID,
)
REQUIRED_CAPABILITIES = RequiredCapabilities(
    REQUIRED_EXTENSIONS, (ProposalType.GROUP_CONTEXT_EXTENSIONS,), (CredentialType.BASIC,)
)

#: libxmtp's group ids are 16 random bytes (openmls's ``GroupId::random``).
GROUP_ID_BYTES = 16

#: How a group's permissions are named: libxmtp's two presets.
PRESETS = {"all_members": presets.all_members, "admin_only": presets.admin_only}

#: A joined group's engine settings: libxmtp's past-epoch window, commits as PrivateMessages, the ratchet tree in
#: the welcome's GroupInfo (libxmtp sets ``use_ratchet_tree_extension``), no external joins.
GROUP_CONFIG = GroupConfig(max_past_epochs=MAX_PAST_EPOCHS, external_pub_in_group_info=False)


def policies_named(permissions: str | PolicySet) -> PolicySet:
    """A preset by name (``all_members`` or ``admin_only``, dashes allowed), or custom policies as given."""
    if isinstance(permissions, PolicySet):
        return permissions
    preset = PRESETS.get(permissions.replace("-", "_"))
    if preset is None:
        raise UnknownPermissions(
            f"no permissions preset is called {permissions!r}: use all-members, admin-only or a PolicySet"
        )
    return preset()


def context_extensions(group: GroupState) -> list[Extension]:
    """The GroupContext extensions of a libxmtp group in this state, in libxmtp's order."""
    data = group.to_extensions()
    order = (
        ids.IMMUTABLE_METADATA_EXTENSION_TYPE,
        ids.MUTABLE_METADATA_EXTENSION_TYPE,
        ids.GROUP_MEMBERSHIP_EXTENSION_TYPE,
        ids.GROUP_PERMISSIONS_EXTENSION_TYPE,
    )
    return [
        *(Extension(extension_type, data[extension_type]) for extension_type in order),
        Extension(ExtensionType.REQUIRED_CAPABILITIES, encode(REQUIRED_CAPABILITIES)),
    ]


def _new_group(installation: Installation, group: GroupState, group_id: bytes | None = None) -> JoinedGroup:
    if group_id is not None and len(group_id) != GROUP_ID_BYTES:
        raise ChangeNotPermitted(f"a libxmtp group id is {GROUP_ID_BYTES} bytes, not {len(group_id)}")
    identity = installation_identity(installation.seed, installation.inbox_id)
    started = int(time.time())
    state = create_mls_group(
        suite(CIPHER_SUITE),
        os.urandom(GROUP_ID_BYTES) if group_id is None else group_id,
        identity.basic_credential,
        identity.signature,
        extensions=context_extensions(group),
        capabilities=CAPABILITIES,
        leaf_extensions=(
            Extension(ExtensionType.APPLICATION_ID, encode(ApplicationId(installation.inbox_id.encode()))),
        ),
        lifetime=Lifetime(started - LIFETIME_MARGIN_SECONDS, started + LIFETIME_SECONDS),
        config=GROUP_CONFIG,
    )
    return JoinedGroup(state, joined_epoch=0)


def new_group(
    installation: Installation,
    *,
    name: str = "",
    description: str = "",
    permissions: str | PolicySet = "all_members",
    group_id: bytes | None = None,
) -> JoinedGroup:
    """A new group of ``installation`` alone, as libxmtp creates one (``group_id``: 16 random bytes unless
    given); no network: members are added by a commit (:meth:`.groups.JoinedGroup.add_members`)."""
    group = GroupState(
        GroupMetadata(ConversationType.GROUP, installation.inbox_id),
        MutableMetadata.new_group(installation.inbox_id, name=name, description=description),
        GroupMembership({installation.inbox_id: 0}),
        policies_named(permissions),
    )
    return _new_group(installation, group, group_id)


def create_group(
    installation: Installation,
    node: XmtpNode,
    *,
    name: str = "",
    description: str = "",
    permissions: str | PolicySet = "all_members",
    members: Sequence[str] = (),
) -> JoinedGroup:
    """A new group created by ``installation`` as libxmtp creates one, its ``members`` (addresses) added
    by one commit when given.  Nothing reaches the node until members are added."""
    joined = new_group(installation, name=name, description=description, permissions=permissions)
    if members:
        joined.add_members(node, members)
    return joined


def find_dm(installation: Installation, known: Iterable[JoinedGroup], peer_inbox_id: str) -> JoinedGroup | None:
    """The DM with ``peer_inbox_id`` among ``known`` groups (either of us may have opened it), if any."""
    pair = {installation.inbox_id, peer_inbox_id}
    for group in known:
        metadata = group.context.metadata
        if metadata.conversation_type is ConversationType.DM and set(metadata.dm_members or ()) == pair:
            return group
    return None


def create_dm(
    installation: Installation, node: XmtpNode, peer_address: str, *, known: Iterable[JoinedGroup] = ()
) -> JoinedGroup:
    """The DM with the inbox of ``peer_address``: the one among ``known`` groups if there is one, else a new
    DM in libxmtp's form (conversation type dm, the two inboxes as its members, no admins, the DM
    policies) with the peer's installations added."""
    (peer,) = resolve_addresses(node, [peer_address])
    found = find_dm(installation, known, peer)
    if found is not None:
        return found
    joined = new_dm(installation, peer)
    joined.add_members_by_inbox_id(node, [peer])
    return joined


def new_dm(installation: Installation, peer_inbox_id: str, *, group_id: bytes | None = None) -> JoinedGroup:
    """A new DM with ``peer_inbox_id`` in libxmtp's form (conversation type dm, the two inboxes as its members,
    no admins, the DM policies), this installation alone in it until a commit adds the peer; no network."""
    if peer_inbox_id == installation.inbox_id:
        raise ChangeNotPermitted("a DM is between two inboxes; this address is this installation's own")
    group = GroupState(
        GroupMetadata(ConversationType.DM, installation.inbox_id, (installation.inbox_id, peer_inbox_id)),
        MutableMetadata.new_dm(),
        GroupMembership({installation.inbox_id: 0}),
        presets.dm(),
    )
    return _new_group(installation, group, group_id)
