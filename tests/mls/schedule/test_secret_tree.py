"""The secret tree's deletion schedule, out-of-order window and refusals (RFC 9420 section 9)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.crypto.labels import expand_with_label
from protocols.libraries.mls.errors import InvalidArgument, KeyAlreadyUsed, RatchetExhausted
from protocols.libraries.mls.schedule import (
    GenerationExpired,
    GenerationReused,
    GenerationTooFarAhead,
    HashRatchet,
    RatchetKey,
    RatchetKind,
    RatchetWindow,
    SecretTree,
    UnknownLeaf,
)
from protocols.libraries.mls.schedule.ratchet import LAST_GENERATION

CS = suite(1)
ROOT_SECRET = bytes(range(32))
APP, HS = RatchetKind.APPLICATION, RatchetKind.HANDSHAKE


def _tree(n_leaves: int = 8, **window: int) -> SecretTree:
    return SecretTree.create(CS, ROOT_SECRET, n_leaves, RatchetWindow(**window))


def _sent_keys(n_leaves: int, leaf: int, kind: RatchetKind, count: int) -> list[RatchetKey]:
    """The first ``count`` keys of a ratchet, from a sender's fresh tree."""
    tree, keys = _tree(n_leaves), []
    for _ in range(count):
        tree, key = tree.send_key(leaf, kind)
        keys.append(key)
    return keys


# --- deletion schedule (section 9.2) -------------------------------------------------


def test_expanding_a_leaf_keeps_only_the_secrets_off_its_path() -> None:
    tree = _tree(8)
    assert dict(tree.frontier) == {7: ROOT_SECRET}
    tree, _ = tree.receive_key(0, APP, 0)
    assert sorted(tree.frontier) == [2, 5, 11]  # siblings of nodes 0, 1 and 3
    assert ROOT_SECRET not in tree.frontier.values()
    assert set(tree.ratchets) == {(0, HS), (0, APP)}
    tree, _ = tree.receive_key(1, HS, 0)
    assert sorted(tree.frontier) == [5, 11]
    for leaf in range(2, 8):
        tree, _ = tree.receive_key(leaf, HS, 0)
    assert dict(tree.frontier) == {}


def test_no_parent_or_leaf_secret_survives_expansion() -> None:
    left = expand_with_label(CS, ROOT_SECRET, "tree", b"left", CS.nh)
    leaf_0 = expand_with_label(CS, left, "tree", b"left", CS.nh)  # 4 leaves: root 3, its left 1, then 0
    tree, _ = _tree(4).receive_key(0, HS, 0)
    stored = set(tree.frontier.values()) | {r.secret for r in tree.ratchets.values()}
    assert not stored & {ROOT_SECRET, left, leaf_0}
    assert tree.ratchets[0, APP].secret == expand_with_label(CS, leaf_0, "application", b"", CS.nh)


def test_a_handed_out_key_and_its_secret_are_gone() -> None:
    tree = _tree(2)
    tree, _ = tree.receive_key(1, APP, 0)
    start = tree.ratchets[1, APP]
    tree, key = tree.receive_key(1, APP, 1)
    ratchet = tree.ratchets[1, APP]
    assert ratchet.generation == 2
    assert ratchet.secret != start.secret
    assert dict(ratchet.kept) == {}
    with pytest.raises(GenerationReused):
        tree.receive_key(1, APP, 1)
    assert key == _sent_keys(2, 1, APP, 2)[1]


def test_a_sender_keeps_no_keys_and_cannot_receive_its_own_generations() -> None:
    tree = _tree(2)
    for _ in range(3):
        tree, _ = tree.send_key(0, HS)
    assert dict(tree.ratchets[0, HS].kept) == {}
    with pytest.raises(GenerationReused):
        tree.receive_key(0, HS, 2)


# --- out-of-order window ------------------------------------------------------------


def test_out_of_order_keys_are_kept_then_deleted_once_used() -> None:
    expected = _sent_keys(8, 3, APP, 6)
    tree = _tree(8)
    for generation in (5, 3, 1, 4, 0, 2):
        tree, key = tree.receive_key(3, APP, generation)
        assert key == expected[generation]
    assert dict(tree.ratchets[3, APP].kept) == {}
    for generation in range(6):
        with pytest.raises(GenerationReused):
            tree.receive_key(3, APP, generation)


def test_keys_behind_the_window_expire() -> None:
    tree, _ = _tree(out_of_order_tolerance=3).receive_key(0, APP, 10)
    assert sorted(tree.ratchets[0, APP].kept) == [7, 8, 9]
    with pytest.raises(GenerationExpired) as refused:
        tree.receive_key(0, APP, 6)
    assert refused.value.oldest_kept == 7
    tree, _ = tree.receive_key(0, APP, 12)
    assert sorted(tree.ratchets[0, APP].kept) == [9, 11]
    with pytest.raises(GenerationExpired):
        tree.receive_key(0, APP, 8)


def test_a_zero_tolerance_keeps_nothing() -> None:
    tree, _ = _tree(out_of_order_tolerance=0).receive_key(0, APP, 4)
    assert dict(tree.ratchets[0, APP].kept) == {}
    with pytest.raises(GenerationExpired):
        tree.receive_key(0, APP, 3)


def test_generations_too_far_ahead_are_refused() -> None:
    tree = _tree(maximum_forward_distance=4)
    with pytest.raises(GenerationTooFarAhead):
        tree.receive_key(0, APP, 5)
    tree, _ = tree.receive_key(0, APP, 4)
    with pytest.raises(GenerationTooFarAhead):
        tree.receive_key(0, APP, 10)
    tree, key = tree.receive_key(0, APP, 9)
    assert key.generation == 9


def test_the_two_ratchets_of_a_leaf_are_independent() -> None:
    tree, _ = _tree().receive_key(2, HS, 7)
    tree, key = tree.receive_key(2, APP, 0)
    assert key == _sent_keys(8, 2, APP, 1)[0]
    assert tree.ratchets[2, HS].generation == 8


# --- the last uint32 generation -----------------------------------------------------


def test_a_ratchet_ends_after_the_last_uint32_generation() -> None:
    ratchet = HashRatchet(APP, 0, LAST_GENERATION, bytes(32))
    ratchet, key = ratchet.next_key(CS)
    assert key.generation == LAST_GENERATION
    assert ratchet.secret == b""
    with pytest.raises(RatchetExhausted):
        ratchet.next_key(CS)
    with pytest.raises(GenerationReused):
        ratchet.key_for(CS, LAST_GENERATION, RatchetWindow())


def test_a_receiver_can_step_onto_the_last_generation() -> None:
    ratchet = HashRatchet(APP, 0, LAST_GENERATION - 2, bytes(32))
    ratchet, key = ratchet.key_for(CS, LAST_GENERATION, RatchetWindow())
    assert key.generation == LAST_GENERATION
    assert sorted(ratchet.kept) == [LAST_GENERATION - 2, LAST_GENERATION - 1]
    ratchet, _ = ratchet.key_for(CS, LAST_GENERATION - 1, RatchetWindow())


# --- refusals -------------------------------------------------------------------------


@pytest.mark.parametrize("leaf", [-1, 8, 100])
def test_leaves_outside_the_tree_are_refused(leaf: int) -> None:
    with pytest.raises(UnknownLeaf) as refused:
        _tree(8).receive_key(leaf, APP, 0)
    assert isinstance(refused.value, ValueError)
    with pytest.raises(UnknownLeaf):
        _tree(8).send_key(leaf, HS)


@pytest.mark.parametrize("generation", [-1, LAST_GENERATION + 1, True])
def test_generations_that_are_not_uint32_are_refused(generation: int) -> None:
    with pytest.raises(InvalidArgument):
        _tree().receive_key(0, APP, generation)


@pytest.mark.parametrize("window", [{"out_of_order_tolerance": -1}, {"maximum_forward_distance": -5}])
def test_negative_windows_are_refused(window: dict[str, int]) -> None:
    with pytest.raises(InvalidArgument):
        RatchetWindow(**window)


def test_a_tree_needs_a_leaf() -> None:
    with pytest.raises(InvalidArgument):
        SecretTree.create(CS, ROOT_SECRET, 0)


def test_reuse_errors_are_key_already_used() -> None:
    assert issubclass(GenerationReused, KeyAlreadyUsed)
    assert issubclass(GenerationExpired, KeyAlreadyUsed)


# --- secrets stay out of reprs and messages ---------------------------------------------


def _spellings(secret: bytes) -> list[str]:
    return [secret.hex(), repr(secret)[2:-1]]


def test_no_repr_or_error_shows_a_secret() -> None:
    tree, key = _tree(2, out_of_order_tolerance=1).receive_key(1, APP, 3)
    secrets = [ROOT_SECRET, key.key, key.nonce, *tree.frontier.values()]
    secrets += [r.secret for r in tree.ratchets.values()]
    secrets += [k for r in tree.ratchets.values() for kept in r.kept.values() for k in (kept.key, kept.nonce)]
    shown = [repr(tree), repr(key), str(tree.window), *(repr(r) for r in tree.ratchets.values())]
    for refusal in ((1, APP, 3), (1, APP, 0), (1, APP, 5000), (9, APP, 0)):
        with pytest.raises(Exception) as refused:
            tree.receive_key(*refusal)
        shown.append(str(refused.value))
    for text in shown:
        for secret in secrets:
            assert not any(spelling in text for spelling in _spellings(secret)), text


# --- trees of any size --------------------------------------------------------------------


def test_a_five_leaf_tree_is_the_left_balanced_part_of_an_eight_leaf_tree() -> None:
    """Leaves 0-3 sit under the root's left child either way; leaf 4 is the root's right child."""
    for leaf in range(4):
        assert _sent_keys(5, leaf, HS, 2) == _sent_keys(8, leaf, HS, 2)
    right = expand_with_label(CS, ROOT_SECRET, "tree", b"right", CS.nh)
    tree, _ = _tree(5).receive_key(4, HS, 0)
    assert tree.ratchets[4, APP].secret == expand_with_label(CS, right, "application", b"", CS.nh)


@pytest.mark.parametrize("n_leaves", [1, 3, 6, 7, 13])
def test_every_leaf_of_any_tree_gets_its_own_keys_in_any_order(n_leaves: int) -> None:
    forward, backward = _tree(n_leaves), _tree(n_leaves)
    keys_forward, keys_backward = {}, {}
    for leaf in range(n_leaves):
        forward, keys_forward[leaf] = forward.send_key(leaf, APP)
    for leaf in reversed(range(n_leaves)):
        backward, keys_backward[leaf] = backward.send_key(leaf, APP)
    assert keys_forward == keys_backward
    assert len({k.key for k in keys_forward.values()}) == n_leaves


# --- random orders against an ideal receiver ----------------------------------------------

TOLERANCE, FORWARD, MAX_GENERATION = 3, 6, 24
REFERENCE = {(leaf, kind): _sent_keys(2, leaf, kind, MAX_GENERATION + 1) for leaf in range(2) for kind in RatchetKind}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from(RatchetKind), st.integers(0, MAX_GENERATION))))
def test_random_receive_orders_match_an_ideal_receiver(requests: list[tuple[int, RatchetKind, int]]) -> None:
    """Each key is given at most once, and exactly when the window says it still exists."""
    tree = _tree(2, out_of_order_tolerance=TOLERANCE, maximum_forward_distance=FORWARD)
    handed_out: dict[tuple[int, RatchetKind], set[int]] = {ratchet: set() for ratchet in REFERENCE}
    for leaf, kind, generation in requests:
        given_before = handed_out[leaf, kind]
        highest = max(given_before, default=-1)
        if generation < highest - TOLERANCE:
            expected_error: type[Exception] | None = GenerationExpired
        elif generation in given_before:
            expected_error = GenerationReused
        elif generation > highest + 1 + FORWARD:
            expected_error = GenerationTooFarAhead
        else:
            expected_error = None
        if expected_error is not None:
            with pytest.raises(expected_error):
                tree.receive_key(leaf, kind, generation)
            continue
        tree, key = tree.receive_key(leaf, kind, generation)
        assert key == REFERENCE[leaf, kind][generation]
        given_before.add(generation)
        assert len(tree.ratchets[leaf, kind].kept) <= TOLERANCE
