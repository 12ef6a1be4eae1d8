"""RFC 9420 key-schedule.json, cipher suite 1, all epochs."""

from __future__ import annotations

from protocols.mls import hpke, key_schedule

from ._vectors import h, load

V = load("key-schedule")[0]

SECRET_FIELDS = [
    "joiner_secret",
    "welcome_secret",
    "init_secret",
    "sender_data_secret",
    "encryption_secret",
    "exporter_secret",
    "epoch_authenticator",
    "external_secret",
    "confirmation_key",
    "membership_key",
    "resumption_psk",
]


def test_all_epochs():
    init_secret = h(V["initial_init_secret"])
    assert len(V["epochs"]) == 5
    for n, ep in enumerate(V["epochs"]):
        ctx = key_schedule.GroupContext(h(V["group_id"]), n, h(ep["tree_hash"]), h(ep["confirmed_transcript_hash"]))
        assert ctx.encode() == h(ep["group_context"])
        secrets = key_schedule.derive_epoch(init_secret, h(ep["commit_secret"]), ctx.encode(), h(ep["psk_secret"]))
        for field in SECRET_FIELDS:
            assert getattr(secrets, field) == h(ep[field]), (n, field)
        assert hpke.derive_key_pair(secrets.external_secret)[1] == h(ep["external_pub"])
        exp = ep["exporter"]
        # The vector's exporter label is a text string that happens to look like hex:
        # it is used as-is (its UTF-8 bytes), unlike every other field.
        out = key_schedule.mls_exporter(secrets.exporter_secret, exp["label"], h(exp["context"]), exp["length"])
        assert out == h(exp["secret"])
        init_secret = secrets.init_secret


def test_group_context_decodes_back():
    from protocols.mls.tls import Reader

    for n, ep in enumerate(V["epochs"]):
        r = Reader(h(ep["group_context"]))
        ctx = key_schedule.GroupContext.decode_from(r)
        r.done()
        assert ctx.epoch == n and ctx.encode() == h(ep["group_context"])
