"""Interop with ts-mls both ways: groups whose members run in Tessera's engine and in ts-mls, in all seven suites.

Each test plays a group through :class:`~._mixed.MixedGroup`: either side
creates it, adds and removes members of either side, commits with a path,
proposes for the other side to commit by reference, or joins by external
commit; every member processes every message, all members exchange
application messages, and all report the same epoch, epoch authenticator,
exporter secret and roster (leaf, identity, signature and encryption keys).
"""

from __future__ import annotations

import pytest

from protocols.libraries.mls.codec import DecodeError
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.errors import ConfirmationMismatch
from protocols.libraries.mls.group.create import create_group
from protocols.libraries.mls.group.external import join_by_external_commit
from protocols.libraries.mls.group.join import join_from_welcome
from protocols.libraries.mls.group.refusals import NoRatchetTree
from protocols.libraries.mls.messages import (
    BasicCredential,
    Commit,
    ExtensionType,
    ProposalByReference,
    PublicMessage,
    Welcome,
)
from protocols.libraries.mls.tree import treekem
from protocols.libraries.mls.tree.path_secret import next_path_secret, path_secret_chain

from ._mixed import Impl, MixedGroup, OurInvitation, our_group_info
from ._receive import join, read_message
from .ts_mls import Peer, PeerError

pytestmark = pytest.mark.peer

SUITES = [pytest.param(suite_id, id=f"suite-{suite_id}") for suite_id in range(1, 8)]
# The long script in every suite with PrivateMessage handshakes, and with PublicMessage ones in suite 1
# (the by-reference test sends PublicMessages in every suite): about 30 s of CPU for the whole file.
SCRIPT_RUNS = [
    *(pytest.param(suite_id, False, id=f"suite-{suite_id}-private-handshakes") for suite_id in range(1, 8)),
    pytest.param(1, True, id="suite-1-public-handshakes"),
]
TREE_DELIVERY = [pytest.param(True, id="tree-in-welcome"), pytest.param(False, id="tree-out-of-band")]

OURS, TS_MLS = Impl.OURS, Impl.TS_MLS


def talk_and_agree(group: MixedGroup, epoch: int, roster: dict[int, str]) -> bytes:
    """Everyone messages everyone, then all agree on ``epoch`` and ``roster``; returns the epoch's exporter secret."""
    group.talk()
    agreed = group.agree()
    assert (agreed.epoch, dict(agreed.roster)) == (epoch, roster)
    return agreed.exporter


def welcome_carries_tree(group: MixedGroup, name: str) -> bool:
    """Whether the last Welcome's GroupInfo has a ratchet_tree extension, opened by the lower layers as ``name``.

    The epoch it opens must be the group's (its epoch authenticator is checked).
    """
    assert group.last_welcome is not None
    invitation = group.invitations[name]
    welcome = read_message(group.last_welcome.hex(), Welcome)
    joined = join(group.cs, welcome, invitation.key_package, invitation.init_private_key)
    assert joined.secrets.epoch_authenticator == group.agree().epoch_authenticator
    return any(found.extension_type == ExtensionType.RATCHET_TREE for found in joined.group_info.extensions)


def commit_pending_by_reference(group: MixedGroup, committer: str) -> set[str]:
    """``committer`` commits the pending proposals; its PublicMessage must name exactly their refs, in order."""
    refs = list(group.pending_refs)
    removed = group.commit_pending(committer)
    assert group.last_commit is not None
    commit = read_message(group.last_commit.hex(), PublicMessage).content.content
    assert isinstance(commit, Commit)
    assert commit.proposals == tuple(ProposalByReference(ref) for ref in refs)
    return removed


# --- joining from a Welcome ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("creator", "joiner"),
    [pytest.param(OURS, TS_MLS, id="ts-mls-joins-us"), pytest.param(TS_MLS, OURS, id="we-join-ts-mls")],
)
@pytest.mark.parametrize("tree_in_welcome", TREE_DELIVERY)
@pytest.mark.parametrize("suite_id", SUITES)
def test_join_from_a_welcome_of_the_other_implementation(
    ts_mls: Peer, suite_id: int, tree_in_welcome: bool, creator: Impl, joiner: Impl
) -> None:
    """alice adds bob; bob joins from her Welcome (the tree in it, or given out of band), then commits with a path."""
    group = MixedGroup(ts_mls, suite_id, tree_in_welcome=tree_in_welcome)
    group.create("alice", creator)
    group.add("alice", {"bob": joiner})

    assert welcome_carries_tree(group, "bob") == tree_in_welcome
    exporter = talk_and_agree(group, 1, {0: "alice", 1: "bob"})
    group.update("bob")
    assert talk_and_agree(group, 2, {0: "alice", 1: "bob"}) != exporter


def test_without_the_extension_we_need_ts_mls_tree_out_of_band(ts_mls: Peer) -> None:
    group = MixedGroup(ts_mls, 1, tree_in_welcome=False)
    group.create("alice", TS_MLS)
    group.add("alice", {"bob": OURS})
    invitation = group.invitations["bob"]
    assert isinstance(invitation, OurInvitation) and group.last_welcome is not None

    with pytest.raises(NoRatchetTree):
        join_from_welcome(group.last_welcome, invitation.key_package, invitation.secrets)


# --- a group living through many epochs ------------------------------------------------------------


@pytest.mark.parametrize(("suite_id", "public_handshakes"), SCRIPT_RUNS)
def test_mixed_group_through_eleven_epochs(ts_mls: Peer, suite_id: int, public_handshakes: bool) -> None:
    """ts-mls creates; both sides add, update, propose, commit by reference and remove, ts-mls removes us."""
    group = MixedGroup(ts_mls, suite_id, public_handshakes=public_handshakes)
    group.create("alice", TS_MLS)
    group.add("alice", {"bob": OURS})
    talk_and_agree(group, 1, {0: "alice", 1: "bob"})

    group.add("bob", {"carol": TS_MLS, "dave": OURS})
    talk_and_agree(group, 2, {0: "alice", 1: "bob", 2: "carol", 3: "dave"})
    group.update("carol")
    talk_and_agree(group, 3, {0: "alice", 1: "bob", 2: "carol", 3: "dave"})
    group.update("bob")
    talk_and_agree(group, 4, {0: "alice", 1: "bob", 2: "carol", 3: "dave"})

    group.remove("dave", "carol")
    talk_and_agree(group, 5, {0: "alice", 1: "bob", 3: "dave"})
    group.add("alice", {"erin": TS_MLS})  # into carol's blank leaf
    talk_and_agree(group, 6, {0: "alice", 1: "bob", 2: "erin", 3: "dave"})

    group.propose_update("dave")
    assert group.commit_pending("erin") == set()
    talk_and_agree(group, 7, {0: "alice", 1: "bob", 2: "erin", 3: "dave"})
    group.propose_add("erin", "frank", OURS)
    assert group.commit_pending("bob") == set()
    talk_and_agree(group, 8, {0: "alice", 1: "bob", 2: "erin", 3: "dave", 4: "frank"})

    group.remove("alice", "bob")  # ts-mls removes one of ours: bob sees we_were_removed
    talk_and_agree(group, 9, {0: "alice", 2: "erin", 3: "dave", 4: "frank"})
    group.update("frank")
    talk_and_agree(group, 10, {0: "alice", 2: "erin", 3: "dave", 4: "frank"})
    group.remove("dave", "alice")  # we remove the group's ts-mls creator
    talk_and_agree(group, 11, {2: "erin", 3: "dave", 4: "frank"})


# --- proposals by reference --------------------------------------------------------------------------


@pytest.mark.parametrize("suite_id", SUITES)
def test_proposals_committed_by_reference_by_the_other_implementation(ts_mls: Peer, suite_id: int) -> None:
    """PublicMessage handshakes, so the commits can be read: every proposal travels by reference, with equal refs.

    The commits with a path that add members (epochs 3 and 4) also give each
    joiner a path secret across implementations.
    """
    group = MixedGroup(ts_mls, suite_id, public_handshakes=True)
    group.create("alice", OURS)
    group.add("alice", {"bob": TS_MLS})
    talk_and_agree(group, 1, {0: "alice", 1: "bob"})

    group.propose_add("bob", "carol", OURS)
    assert commit_pending_by_reference(group, "alice") == set()
    talk_and_agree(group, 2, {0: "alice", 1: "bob", 2: "carol"})

    group.propose_update("alice")
    group.propose_add("carol", "dave", OURS)
    assert commit_pending_by_reference(group, "bob") == set()
    talk_and_agree(group, 3, {0: "alice", 1: "bob", 2: "carol", 3: "dave"})

    group.propose_remove("bob", "carol")
    group.propose_add("alice", "erin", TS_MLS)
    assert commit_pending_by_reference(group, "dave") == {"carol"}
    talk_and_agree(group, 4, {0: "alice", 1: "bob", 2: "erin", 3: "dave"})

    group.propose_remove("dave", "erin")
    group.propose_remove("erin", "dave")
    assert commit_pending_by_reference(group, "bob") == {"dave", "erin"}  # the tree shrinks to two leaves
    talk_and_agree(group, 5, {0: "alice", 1: "bob"})


# --- external commits --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("members", "joiner"),
    [pytest.param(TS_MLS, OURS, id="we-join-ts-mls"), pytest.param(OURS, TS_MLS, id="ts-mls-joins-us")],
)
@pytest.mark.parametrize("suite_id", SUITES)
def test_external_commit_into_a_group_of_the_other_implementation(
    ts_mls: Peer, suite_id: int, members: Impl, joiner: Impl
) -> None:
    """carol joins alice and bob's group from bob's GroupInfo, then a member and she each commit with a path."""
    group = MixedGroup(ts_mls, suite_id)
    group.create("alice", members)
    group.add("alice", {"bob": members})
    group.join_external("carol", joiner, via="bob")
    talk_and_agree(group, 2, {0: "alice", 1: "bob", 2: "carol"})

    group.update("bob")
    talk_and_agree(group, 3, {0: "alice", 1: "bob", 2: "carol"})
    group.remove("carol", "alice")
    talk_and_agree(group, 4, {1: "bob", 2: "carol"})


def test_each_side_refuses_the_others_external_pub(ts_mls: Peer) -> None:
    """Why _mixed.py rewraps external_pub: ts-mls 1.6.4 writes and reads the bare key, RFC 9420 a length-prefixed one.

    When ts-mls follows RFC 9420 section 12.4.3.2 (it does from 2.0.0-rc.12),
    this fails: drop ``rfc_external_pub`` from the driver and
    ``group_info_for_ts_mls`` from _mixed.py.
    """
    cs = suite(1)
    alice = ts_mls.call("create_group", identity=b"alice", group_id=b"two-way", suite=1)["handle"]
    theirs = bytes.fromhex(ts_mls.call("group_info", handle=alice)["group_info"])
    with pytest.raises(DecodeError):
        join_by_external_commit(theirs, BasicCredential(b"bob"), cs.generate_signature_key_pair())

    ours = create_group(cs, b"two-way", BasicCredential(b"carol"), cs.generate_signature_key_pair())
    with pytest.raises(PeerError, match="Invalid public key"):
        ts_mls.call("join_external", group_info=our_group_info(ours), identity=b"dave")


# --- ts-mls 1.6.4 deviations ----------------------------------------------------------------------------


@pytest.mark.parametrize("members", [pytest.param(OURS, id="our-welcome"), pytest.param(TS_MLS, id="ts-mls-welcome")])
def test_ts_mls_refuses_a_valid_tree_whose_parents_list_different_unmerged_leaves(ts_mls: Peer, members: Impl) -> None:
    """ts-mls 1.6.4 wants equal unmerged_leaves on every non-blank parent above an unmerged leaf; RFC 9420 does not.

    RFC 9420 section 12.4.3.1 (checking a joiner's tree) asks only that an
    unmerged leaf of a parent be listed by the non-blank parents between the
    two.  ts-mls's
    validateRatchetTree (clientState.js) instead compares the whole
    unmerged_leaves list of the parent with that of every non-blank node on
    the leaf's direct path.  Here bob's commit removing dave fills parents
    1, 3 and 7 of five leaves; alice then adds frank into dave's blank leaf 3
    and gina into leaf 5, so node 3 lists [3] and node 7 lists [3, 5]: a
    valid tree, which our frank accepts and ts-mls's gina refuses, whichever
    side built it.  Any mixed group whose tree takes this shape keeps
    ts-mls clients from joining until a commit's path clears it.  When this
    fails, ts-mls has fixed it.
    """
    group = MixedGroup(ts_mls, 1)
    group.create("alice", members)
    group.add("alice", {"bob": members, "carol": members, "dave": members, "erin": members})
    group.remove("bob", "dave")

    with pytest.raises(PeerError, match="must list leaf node in its unmerged_leaves"):
        group.add("alice", {"frank": OURS, "gina": TS_MLS})
    unmerged = {index: list(node.unmerged_leaves) for index, node in group.ours["frank"].tree.parents()}
    assert unmerged == {1: [], 3: [3], 7: [3, 5]}


def _one_path_secret_further(cs: CipherSuite, first: bytes, length: int) -> list[bytes]:
    """ts-mls's chain: the commit secret (the chain's last value) derived one step further."""
    *secrets, commit_secret = path_secret_chain(cs, first, length)
    return [*secrets, next_path_secret(cs, commit_secret)]


@pytest.mark.parametrize(
    ("committer", "refusal", "message"),
    [
        pytest.param(OURS, PeerError, "Could not verify confirmation tag", id="ts-mls-receives-ours"),
        pytest.param(TS_MLS, ConfirmationMismatch, "confirmation tag", id="we-receive-ts-mls"),
    ],
)
def test_ts_mls_commit_secret_is_one_step_off_when_the_root_leaves_the_filtered_path(
    ts_mls: Peer, monkeypatch: pytest.MonkeyPatch, committer: Impl, refusal: type[Exception], message: str
) -> None:
    """ts-mls 1.6.4 and RFC 9420 disagree on the commit secret when the root is not on the committer's filtered path.

    That happens when the other half of the tree is all blank: here dave, at
    leaf 3 of four, removes alice and bob (leaves 0 and 1), so the root's
    copath child has an empty resolution and the root leaves dave's filtered
    direct path.  RFC 9420 (Ratchet Tree Evolution) takes the commit secret as
    path_secret[n+1], one DeriveSecret(., "path") past the last secret of the
    UpdatePath: the working group chose that wording for exactly this case
    (mlswg/mls-protocol issue 690, PR 707, draft-17); our tree/treekem.py and
    mls-rs's TreeKem::encap follow it.  ts-mls derives a secret for the blank
    root first and the commit secret from that, one step further
    (getCommitSecret and pathToRoot in its pathSecrets.js, for senders and
    receivers alike).  The two sides then reach different epochs and each
    refuses the other's confirmation tag.  Derive one step further on our
    side and they agree, which confirms the diagnosis.  When this test
    fails, ts-mls has fixed it.
    """

    def left_half_removed() -> MixedGroup:
        group = MixedGroup(ts_mls, 1)
        group.create("alice", TS_MLS)
        other = TS_MLS if committer is OURS else OURS
        group.add("alice", {"bob": TS_MLS, "carol": other, "dave": committer})
        return group

    with pytest.raises(refusal, match=message):
        left_half_removed().remove("dave", "alice", "bob")

    monkeypatch.setattr(treekem, "path_secret_chain", _one_path_secret_further)
    group = left_half_removed()
    group.remove("dave", "alice", "bob")
    talk_and_agree(group, 2, {2: "carol", 3: "dave"})
