"""Leaving a group with a ts-mls member: ts-mls 1.6.4 does not list SelfRemove, so we propose a Remove of ourselves.

Our KeyPackages list SelfRemove (0x000a); a group is self-remove-capable
only when every member's do (draft-ietf-mls-extensions), so with a ts-mls
member ``propose(self_remove=True)`` falls back to the RFC 9420 Remove that
ts-mls commits like any other.
"""

from __future__ import annotations

import pytest

from protocols.libraries import mls
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.messages import MLSMessage, PublicMessage, Remove, SenderMember

from ._mixed import Impl, MixedGroup
from .ts_mls import Peer

pytestmark = pytest.mark.peer


def test_leaving_beside_a_ts_mls_member_is_a_remove_that_ts_mls_commits(ts_mls: Peer) -> None:
    group = MixedGroup(ts_mls, 1, public_handshakes=True)
    group.create("alice", Impl.OURS)
    group.add("alice", {"bob": Impl.OURS, "tina": Impl.TS_MLS})
    bob = group.ours["bob"]
    assert not mls.self_remove_capable(bob)

    message, group.ours["bob"] = mls.propose(bob, self_remove=True)
    framed = decode(MLSMessage, message).message
    assert isinstance(framed, PublicMessage)
    assert (framed.content.sender, framed.content.content) == (SenderMember(bob.own_leaf), Remove(bob.own_leaf))
    received = mls.process_message(group.ours["alice"], message)
    assert isinstance(received, mls.ProposalReceived) and received.kind == "self_remove"
    group.ours["alice"] = received.new_state
    assert ts_mls.call("process_message", handle=group.theirs["tina"], message=message)["kind"] == "proposal"

    assert group.commit_pending("tina") == {"bob"}
    group.talk()
    assert dict(group.agree().roster) == {0: "alice", 2: "tina"}
