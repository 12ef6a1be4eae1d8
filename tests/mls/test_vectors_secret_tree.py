"""RFC 9420 secret-tree.json, cipher suite 1 (trees of 1, 8 and 32 leaves)."""

from __future__ import annotations

from protocols.mls import secret_tree as st

from ._vectors import h, load

VECTORS = load("secret-tree")


def test_sender_data_key_and_nonce():
    for v in VECTORS:
        sd = v["sender_data"]
        key, nonce = st.sender_data_key_nonce(h(sd["sender_data_secret"]), h(sd["ciphertext"]))
        assert (key, nonce) == (h(sd["key"]), h(sd["nonce"]))


def test_ratchet_keys_for_every_leaf():
    assert sorted(len(v["leaves"]) for v in VECTORS) == [1, 8, 32]
    for v in VECTORS:
        tree = st.new_tree(h(v["encryption_secret"]), len(v["leaves"]))
        for leaf, entries in enumerate(v["leaves"]):
            for e in entries:
                gen = e["generation"]
                tree, hk, hn = st.receive_key(tree, leaf, st.HANDSHAKE, gen)
                tree, ak, an = st.receive_key(tree, leaf, st.APPLICATION, gen)
                assert (hk, hn) == (h(e["handshake_key"]), h(e["handshake_nonce"])), (leaf, gen)
                assert (ak, an) == (h(e["application_key"]), h(e["application_nonce"])), (leaf, gen)


def test_leaves_in_reverse_order_give_same_keys():
    """The frontier expansion must not depend on which leaf asks first."""
    v = max(VECTORS, key=lambda v: len(v["leaves"]))
    tree = st.new_tree(h(v["encryption_secret"]), len(v["leaves"]))
    for leaf in reversed(range(len(v["leaves"]))):
        e = v["leaves"][leaf][-1]
        tree, ak, an = st.receive_key(tree, leaf, st.APPLICATION, e["generation"])
        assert (ak, an) == (h(e["application_key"]), h(e["application_nonce"]))
    assert not tree.nodes  # every node secret was consumed and deleted


def test_sender_side_matches_receiver_side():
    v = VECTORS[1]
    tree = st.new_tree(h(v["encryption_secret"]), len(v["leaves"]))
    for _ in range(16):
        tree, gen, key, nonce = st.next_send_key(tree, 3, st.HANDSHAKE)
    e = v["leaves"][3][1]
    assert gen == e["generation"] == 15
    assert (key, nonce) == (h(e["handshake_key"]), h(e["handshake_nonce"]))
