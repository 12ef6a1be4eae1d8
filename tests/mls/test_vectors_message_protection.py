"""RFC 9420 message-protection.json, cipher suite 1: the PrivateMessage application case.

The engine's framing keeps RFC 9420's PrivateMessage cryptography (sender
data keys from the ciphertext sample, SenderDataAAD, PrivateContentAAD,
reuse guard, FramedContentTBS signature); for application data with empty
authenticated_data even the FramedContent bytes coincide.  This test opens
the RFC's application_priv with the engine's functions.
"""

from __future__ import annotations

from protocols.mls import framing, suite
from protocols.mls import key_schedule as ks
from protocols.mls.labels import verify_with_label
from protocols.mls.secret_tree import (
    APPLICATION,
    apply_reuse_guard,
    new_tree,
    receive_key,
)
from protocols.mls.tls import Reader

from ._vectors import h, load

V = load("message-protection")[0]


def _envelope(data: bytes) -> framing.Envelope:
    r = Reader(data)
    assert r.u16() == 1 and r.u16() == framing.WIRE_FORMAT_PRIVATE
    group_id, epoch, content_type, aad = r.opaque(), r.u64(), r.u8(), r.opaque()
    assert aad == b""  # the engine's framing always uses empty authenticated_data
    env = framing.Envelope(group_id, epoch, content_type, r.opaque(), r.opaque())
    r.done()
    return env


def test_application_private_message_opens_with_engine_framing():
    env = _envelope(h(V["application_priv"]))
    assert env.content_type == framing.APPLICATION
    sender = framing.open_sender_data(env, h(V["sender_data_secret"]))
    assert sender.leaf == 1

    _, key, nonce = receive_key(new_tree(h(V["encryption_secret"]), 2), 1, APPLICATION, sender.generation)
    plain = suite.aead_open(
        key,
        apply_reuse_guard(nonce, sender.reuse_guard),
        env.ciphertext,
        framing.content_aad(env.group_id, env.epoch, env.content_type),
    )
    r = Reader(plain)
    body, signature = r.opaque(), r.opaque()
    padding = r.take(len(plain) - len(body) - len(signature) - 3)  # 1-byte + 2-byte length prefixes
    r.done()
    assert set(padding) <= {0}  # RFC padding is all zeros; the engine never pads
    assert body == h(V["application"])

    ctx = ks.GroupContext(h(V["group_id"]), V["epoch"], h(V["tree_hash"]), h(V["confirmed_transcript_hash"]))
    framed = framing.framed_content(env.group_id, env.epoch, sender.leaf, framing.APPLICATION, body)
    tbs = framing.content_tbs(framed, ctx.encode())
    assert verify_with_label(h(V["signature_pub"]), "FramedContentTBS", tbs, signature)
