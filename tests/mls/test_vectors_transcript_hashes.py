"""RFC 9420 transcript-hashes.json, cipher suite 1."""

from __future__ import annotations

from protocols.mls import key_schedule
from protocols.mls.tls import opaque

from ._vectors import h, load

V = load("transcript-hashes")[0]


def test_transcript_hash_update_and_confirmation_tag():
    content = h(V["authenticated_content"])
    # AuthenticatedContent = wire_format || FramedContent || signature<V> || confirmation_tag<V>;
    # the confirmed input is everything before the (32-byte, 1-byte-prefixed) tag.
    tag = content[-32:]
    assert content[-33] == 32
    confirmed_input = content[:-33]
    assert opaque(tag) == content[-33:]
    confirmed = key_schedule.next_confirmed_transcript_hash(h(V["interim_transcript_hash_before"]), confirmed_input)
    assert confirmed == h(V["confirmed_transcript_hash_after"])
    assert key_schedule.confirmation_tag(h(V["confirmation_key"]), confirmed) == tag
    interim = key_schedule.next_interim_transcript_hash(confirmed, tag)
    assert interim == h(V["interim_transcript_hash_after"])
