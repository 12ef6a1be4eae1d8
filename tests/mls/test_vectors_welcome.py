"""RFC 9420 welcome.json, cipher suite 1: the Welcome path the engine mirrors.

Exercises RefHash (KeyPackageRef), DecryptWithLabel("Welcome"), the
welcome_secret -> key/nonce derivation, GroupContext decoding, the GroupInfo
signature and the confirmation tag from a joiner_secret.
"""

from __future__ import annotations

from protocols.mls import key_schedule as ks
from protocols.mls import suite
from protocols.mls.labels import decrypt_with_label, ref_hash, verify_with_label
from protocols.mls.tls import Reader

from ._vectors import h, load

V = load("welcome")[0]


def _strip_mls_message(data: bytes, wire_format: int) -> bytes:
    r = Reader(data)
    assert r.u16() == 1 and r.u16() == wire_format
    return data[4:]


def _group_secrets(welcome: Reader, kp_ref: bytes) -> tuple[bytes, bytes, bytes]:
    """(kem_output, ciphertext, encrypted_group_info) of our entry."""
    assert welcome.u16() == 1  # cipher suite
    entries = welcome.vector(lambda r: (r.opaque(), r.opaque(), r.opaque()))
    encrypted_group_info = welcome.opaque()
    welcome.done()
    mine = [e for e in entries if e[0] == kp_ref]
    assert len(mine) == 1
    return mine[0][1], mine[0][2], encrypted_group_info


def test_welcome_decrypts_and_verifies():
    key_package = _strip_mls_message(h(V["key_package"]), 5)
    kp_ref = ref_hash("MLS 1.0 KeyPackage Reference", key_package)
    welcome = Reader(_strip_mls_message(h(V["welcome"]), 3))
    kem_output, ciphertext, egi = _group_secrets(welcome, kp_ref)

    gs = Reader(decrypt_with_label(h(V["init_priv"]), "Welcome", egi, kem_output, ciphertext))
    joiner = gs.opaque()
    assert len(joiner) == suite.NH

    key, nonce = ks.welcome_key_nonce(ks.welcome_secret(joiner))
    info = suite.aead_open(key, nonce, egi, b"")
    r = Reader(info)
    ctx = ks.GroupContext.decode_from(r)
    r.vector(lambda rr: (rr.u16(), rr.opaque()))  # GroupInfo extensions
    tag, _signer, signature = r.opaque(), r.u32(), r.opaque()
    r.done()
    # GroupInfoTBS is everything before the signature; 64 needs a 2-byte varint prefix.
    assert info[-66:-64] == b"\x40\x40" and info[-64:] == signature
    assert verify_with_label(h(V["signer_pub"]), "GroupInfoTBS", info[:-66], signature)

    secrets = ks.from_joiner(joiner, ctx.encode())
    assert ks.confirmation_tag(secrets.confirmation_key, ctx.confirmed_transcript_hash) == tag
