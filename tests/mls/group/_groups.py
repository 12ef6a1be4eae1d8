"""Small groups of real members for the state-machine tests: build one, sign its GroupInfo, deliver to everyone."""

from __future__ import annotations

from collections.abc import Sequence

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.crypto import CipherSuite, Rng
from protocols.libraries.mls.group.commit import commit, group_info_extensions
from protocols.libraries.mls.group.create import create_group
from protocols.libraries.mls.group.group_info import sign_group_info
from protocols.libraries.mls.group.join import join_from_welcome
from protocols.libraries.mls.group.process import process
from protocols.libraries.mls.group.results import Received
from protocols.libraries.mls.group.state import GroupConfig, GroupState

from ._clients import Client, client

#: A non-default extension type every test client lists in its capabilities, so a group may put it in its context.
EXTENSION = 0xFF00


def capabilities(cs: CipherSuite) -> m.Capabilities:
    """MLS 1.0, the group's suite, :data:`EXTENSION`, basic credentials."""
    return m.Capabilities((m.ProtocolVersion.MLS10,), (cs.id,), (EXTENSION,), (), (m.CredentialType.BASIC,))


def member_client(cs: CipherSuite, name: bytes) -> Client:
    """A seeded client whose KeyPackage lists :data:`EXTENSION`."""
    return client(cs, name, capabilities=capabilities(cs))


def build_group(
    cs: CipherSuite,
    names: Sequence[bytes],
    *,
    group_id: bytes = b"group",
    config: GroupConfig | None = None,
    rng: Rng | None = None,
) -> list[GroupState]:
    """A group where ``names[i]`` sits at leaf ``i``: the first creates it and adds the others in one commit."""
    creator = member_client(cs, names[0])
    state = create_group(
        cs,
        group_id,
        m.BasicCredential(names[0]),
        creator.signature,
        capabilities=capabilities(cs),
        config=config,
        rng=rng,
    )
    joiners = [member_client(cs, name) for name in names[1:]]
    if not joiners:
        return [state]
    outcome = commit(state, [m.Add(joiner.key_package) for joiner in joiners], rng=rng)
    assert outcome.welcome is not None
    joined = [
        join_from_welcome(outcome.welcome, joiner.key_package, joiner.secrets, config=config) for joiner in joiners
    ]
    return [outcome.new_state, *joined]


def signed_group_info(state: GroupState) -> m.GroupInfo:
    """The GroupInfo ``state``'s member would publish for its current epoch."""
    return sign_group_info(
        state.suite,
        state.context,
        group_info_extensions(state),
        state.keys.confirmation_tag,
        state.own_leaf,
        state.signature_private,
    )


def deliver(states: Sequence[GroupState], message: bytes, *, sender: int) -> list[Received]:
    """``message`` processed by every state but the one at position ``sender``, in order."""
    return [process(state, message) for position, state in enumerate(states) if position != sender]
