"""Deterministic, versioned snapshot encoding of :class:`GroupState`.

The encoding is canonical: mappings are written sorted by key, sets sorted,
and decoding refuses anything a correct encoder could not have produced
(unsorted keys, bad booleans, wrong secret lengths, non-minimal lengths,
trailing bytes).  Hence ``restore(snapshot(s)) == s`` and
``snapshot(restore(b)) == b``.  The derived ``group_context`` is not stored;
:func:`restore` recomputes it.

The snapshot contains every private key and secret of the member: store it
as carefully as the identity key.
"""

from __future__ import annotations

import itertools

from . import roster as rosters
from . import suite, treemath, wire
from .errors import InvalidSnapshot
from .proposals import SetAdmins, decode_admins, decode_proposal, encode_admins, encode_proposal
from .secret_tree import Ratchet, SecretTree, frozen_map
from .state import GroupState, PastEpoch, PendingCommit, PendingProposal, Signer, make_state
from .tls import Reader, Writer

# --- secret tree ------------------------------------------------------------------


def _write_ratchet(w: Writer, r: Ratchet) -> None:
    w.u32(r.generation).opaque(r.secret)
    w.vector(sorted(r.skipped.items()), lambda ww, kv: ww.u32(kv[0]).opaque(kv[1][0]).opaque(kv[1][1]))


def _sorted_unique(r: Reader, keys: list[int], what: str) -> None:
    if any(a >= b for a, b in itertools.pairwise(keys)):
        raise r.fail(f"{what} keys are not sorted and unique")


def _read_ratchet(r: Reader) -> Ratchet:
    generation, secret = r.u32(), r.fixed(suite.NH)
    skipped = r.vector(lambda rr: (rr.u32(), (rr.fixed(suite.NK), rr.fixed(suite.NN))))
    _sorted_unique(r, [g for g, _ in skipped], "skipped-key")
    if skipped and skipped[-1][0] >= generation:
        raise r.fail("skipped generation is not behind the ratchet")
    return Ratchet(generation, secret, frozen_map(dict(skipped)))


def _write_tree(w: Writer, t: SecretTree) -> None:
    w.u32(t.n_leaves)
    w.vector(sorted(t.nodes.items()), lambda ww, kv: ww.u32(kv[0]).opaque(kv[1]))
    w.vector(sorted(t.ratchets.items()), _write_leaf_ratchets)


def _write_leaf_ratchets(w: Writer, item: tuple[int, tuple[Ratchet, Ratchet]]) -> None:
    leaf, (handshake, application) = item
    w.u32(leaf)
    _write_ratchet(w, handshake)
    _write_ratchet(w, application)


def _read_tree(r: Reader) -> SecretTree:
    n = r.u32()
    if n == 0 or n & (n - 1):
        raise r.fail("secret tree size must be a power of two")
    nodes = r.vector(lambda rr: (rr.u32(), rr.fixed(suite.NH)))
    ratchets = r.vector(lambda rr: (rr.u32(), (_read_ratchet(rr), _read_ratchet(rr))))
    _sorted_unique(r, [k for k, _ in nodes], "tree node")
    _sorted_unique(r, [k for k, _ in ratchets], "ratchet")
    if (nodes and nodes[-1][0] >= treemath.node_width(n)) or (ratchets and ratchets[-1][0] >= n):
        raise r.fail("secret tree index out of range")
    return SecretTree(n, frozen_map(dict(nodes)), frozen_map(dict(ratchets)))


# --- past epochs, proposals, pending commit ----------------------------------------------


def _write_signer(w: Writer, s: Signer | None) -> None:
    w.boolean(s is not None)
    if s is not None:
        w.raw(bytes.fromhex(s.credential)).opaque(s.signature_key)


def _read_signer(r: Reader) -> Signer | None:
    return Signer(r.take(32).hex(), r.fixed(32)) if r.boolean() else None


def _write_past(w: Writer, p: PastEpoch) -> None:
    w.u64(p.epoch).opaque(p.group_context).opaque(p.sender_data_secret).opaque(p.exporter_secret)
    _write_tree(w, p.tree)
    w.vector(p.signers, _write_signer)


def _read_past(r: Reader) -> PastEpoch:
    epoch, ctx, sds, exp = r.u64(), r.opaque(), r.fixed(suite.NH), r.fixed(suite.NH)
    return PastEpoch(epoch, ctx, sds, exp, _read_tree(r), tuple(r.vector(_read_signer)))


def _write_pending_proposal(w: Writer, p: PendingProposal) -> None:
    w.opaque(p.ref).u32(p.proposer)
    encode_proposal(w, p.proposal)


def _read_pending_proposal(r: Reader) -> PendingProposal:
    ref, proposer, proposal = r.fixed(suite.NH), r.u32(), decode_proposal(r)
    if isinstance(proposal, SetAdmins):
        raise r.fail("SetAdmins is only valid inside a commit, never pending")
    return PendingProposal(ref, proposer, proposal)


def _creds(w: Writer, creds: tuple[str, ...]) -> None:
    w.vector(creds, lambda ww, c: ww.raw(bytes.fromhex(c)))


def _read_creds(r: Reader) -> tuple[str, ...]:
    return tuple(r.vector(lambda rr: rr.take(32).hex()))


def _write_pending_commit(w: Writer, p: PendingCommit | None) -> None:
    w.boolean(p is not None)
    if p is not None:
        w.opaque(p.message_ref)
        for creds in (p.added, p.removed, p.updated):
            _creds(w, creds)
        _write_state(w, p.new_state)


def _read_pending_commit(r: Reader, nested: bool) -> PendingCommit | None:
    if not r.boolean():
        return None
    if nested:
        raise r.fail("a pending commit's state cannot itself hold a pending commit")
    ref, added, removed, updated = r.fixed(suite.NH), _read_creds(r), _read_creds(r), _read_creds(r)
    return PendingCommit(ref, added, removed, updated, _read_state(r, nested=True))


# --- group state -------------------------------------------------------------------


def _write_state(w: Writer, s: GroupState) -> None:
    w.opaque(s.group_id).u64(s.epoch).raw(rosters.encode_roster(s.roster)).raw(encode_admins(s.admins))
    w.u32(s.own_leaf).opaque(s.own_hpke_private).opaque(s.own_signing_private)
    w.opaque(s.confirmed_transcript_hash).opaque(s.interim_transcript_hash)
    for secret in (s.init_secret, s.exporter_secret, s.confirmation_key, s.epoch_authenticator, s.sender_data_secret):
        w.opaque(secret)
    _write_tree(w, s.tree)
    w.vector(s.past_epochs, _write_past).vector(s.pending_proposals, _write_pending_proposal)
    _write_pending_commit(w, s.pending_commit)
    w.boolean(s.active).u8(s.max_past_epochs)


def _read_state(r: Reader, nested: bool = False) -> GroupState:
    f: dict = {"group_id": r.opaque(), "epoch": r.u64(), "roster": rosters.decode_roster(r), "admins": decode_admins(r)}
    f.update(own_leaf=r.u32(), own_hpke_private=r.fixed(32), own_signing_private=r.fixed(32))
    f.update(confirmed_transcript_hash=r.opaque(), interim_transcript_hash=r.fixed(suite.NH))
    for name in ("init_secret", "exporter_secret", "confirmation_key", "epoch_authenticator", "sender_data_secret"):
        f[name] = r.fixed(suite.NH)
    f.update(tree=_read_tree(r), past_epochs=tuple(r.vector(_read_past)))
    f.update(pending_proposals=tuple(r.vector(_read_pending_proposal)))
    f.update(pending_commit=_read_pending_commit(r, nested), active=r.boolean(), max_past_epochs=r.u8())
    _check_consistency(r, f)
    return make_state(**f)


def _check_consistency(r: Reader, f: dict) -> None:
    """Refuse snapshots no engine operation could have produced in these respects."""
    roster, own = f["roster"], f["own_leaf"]
    if own >= len(roster) or roster[own] is None:
        raise r.fail("own leaf is not in the roster")
    epochs = [p.epoch for p in f["past_epochs"]]
    if any(a <= b for a, b in itertools.pairwise(epochs)) or (epochs and epochs[0] >= f["epoch"]):
        raise r.fail("past epochs must be older than the current one, newest first")
    if len(epochs) > f["max_past_epochs"]:
        raise r.fail("more past epochs than the retention limit")


def snapshot(state: GroupState) -> bytes:
    """Canonical bytes of ``state`` (includes all its secrets)."""
    w = wire.writer(wire.KIND_SNAPSHOT)
    _write_state(w, state)
    return w.bytes()


def restore(data: bytes) -> GroupState:
    """Inverse of :func:`snapshot`; anything else raises :class:`InvalidSnapshot`."""
    r = wire.reader(data, wire.KIND_SNAPSHOT, InvalidSnapshot)
    state = _read_state(r)
    r.done()
    return state
