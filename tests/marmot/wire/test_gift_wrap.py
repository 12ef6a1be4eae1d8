"""NIP-59 gift wraps: round trips, every refusal, and rust-nostr (nostr-sdk) reading ours and writing for us."""

from __future__ import annotations

import json
import random

import nostr_sdk  # type: ignore[import-untyped]  # rust-nostr ships no type information
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.marmot.wire import nip44, nostr, rumors
from protocols.marmot.wire.gift_wrap import (
    GIFT_WRAP_KIND,
    MAX_PLAINTEXT_BYTES,
    MAX_RUMOR_BYTES,
    RUST_NOSTR_MAX_PLAINTEXT_BYTES,
    SEAL_KIND,
    TIMESTAMP_JITTER_SECONDS,
    GiftWrapError,
    unwrap,
    wrap,
)

NOW = 1_790_000_000
ALICE = nostr.generate_secret_key(random.Random(1).randbytes)
BOB = nostr.generate_secret_key(random.Random(2).randbytes)
ALICE_PK = nostr.public_key_xonly(ALICE).hex()
BOB_PK = nostr.public_key_xonly(BOB).hex()


def _rumor(content: str = "welcome", *, kind: int = 444, tags: list | None = None, pubkey: str = ALICE_PK) -> dict:
    return rumors.make(pubkey, NOW, content, kind=kind, tags=tags if tags is not None else [["e", "ab" * 32]])


def _open(event: dict, secret_key: bytes) -> dict:
    """One layer opened by hand: the event its NIP-44 content holds."""
    plaintext = nip44.decrypt(event["content"], nip44.conversation_key(secret_key, bytes.fromhex(event["pubkey"])))
    return json.loads(plaintext)


def _reseal(gift: dict, recipient: bytes, change_seal) -> dict:
    """``gift`` with its seal replaced by ``change_seal(seal)``, re-encrypted and re-signed by a new one-time key."""
    seal = change_seal(_open(gift, recipient))
    one_time = nostr.generate_secret_key()
    key = nip44.conversation_key(one_time, bytes.fromhex(BOB_PK))
    content = nip44.encrypt(json.dumps(seal), key)
    return nostr.sign_event(
        {"created_at": NOW, "kind": GIFT_WRAP_KIND, "tags": gift["tags"], "content": content}, one_time
    )


def _sealed(rumor_json: str, *, tags: list | None = None, kind: int = SEAL_KIND, signer: bytes = ALICE) -> dict:
    key = nip44.conversation_key(signer, bytes.fromhex(BOB_PK))
    unsigned = {"created_at": NOW, "kind": kind, "tags": tags or [], "content": nip44.encrypt(rumor_json, key)}
    return nostr.sign_event(unsigned, signer)


# --- round trips -----------------------------------------------------------------------


def test_wrap_then_unwrap_gives_the_rumor_and_its_sender() -> None:
    rumor = _rumor()
    gift = wrap(rumor, ALICE, BOB_PK, now=NOW)
    opened = unwrap(gift, BOB)

    assert opened.rumor == rumor
    assert opened.sender_pubkey == ALICE_PK
    assert opened.wrapper_id == gift["id"]
    assert opened.seal_id == _open(gift, BOB)["id"]


def test_the_layers_have_nip59s_shape() -> None:
    gift = wrap(_rumor(), ALICE, BOB_PK, now=NOW)
    seal = _open(gift, BOB)

    assert gift["kind"] == GIFT_WRAP_KIND and gift["tags"] == [["p", BOB_PK]]
    assert gift["pubkey"] not in (ALICE_PK, BOB_PK)
    assert seal["kind"] == SEAL_KIND and seal["tags"] == [] and seal["pubkey"] == ALICE_PK
    nostr.verify_event(gift)
    nostr.verify_event(seal)
    assert "sig" not in _open(seal, BOB)


def test_timestamps_are_moved_back_by_up_to_two_days() -> None:
    stamps = []
    for _ in range(40):
        gift = wrap(_rumor(), ALICE, BOB_PK, now=NOW)
        stamps += [gift["created_at"], _open(gift, BOB)["created_at"]]
    assert all(NOW - TIMESTAMP_JITTER_SECONDS <= stamp <= NOW for stamp in stamps)
    assert len(set(stamps)) > 70, "the jitter is random, layer by layer"


def test_a_seeded_rng_makes_the_wrap_reproducible() -> None:
    first = wrap(_rumor(), ALICE, BOB_PK, now=NOW, rng=random.Random(7).randbytes)
    again = wrap(_rumor(), ALICE, BOB_PK, now=NOW, rng=random.Random(7).randbytes)
    other = wrap(_rumor(), ALICE, BOB_PK, now=NOW, rng=random.Random(8).randbytes)
    assert first == again != other


tag = st.lists(st.text(max_size=20), min_size=1, max_size=4)


@settings(max_examples=40, deadline=None)
@given(content=st.text(max_size=300), kind=st.integers(0, 65535), tags=st.lists(tag, max_size=5))
def test_any_rumor_survives_the_round_trip(content: str, kind: int, tags: list) -> None:
    rumor = _rumor(content, kind=kind, tags=tags)
    assert unwrap(wrap(rumor, ALICE, BOB_PK, now=NOW), BOB).rumor == rumor


# --- refusals when wrapping ----------------------------------------------------------------


def test_wrapping_refuses_a_rumor_another_key_wrote() -> None:
    with pytest.raises(GiftWrapError, match="not the sealing key") as caught:
        wrap(_rumor(pubkey=BOB_PK), ALICE, BOB_PK, now=NOW)
    assert caught.value.reason == "sender_mismatch"


@pytest.mark.parametrize(
    "damage",
    [
        lambda r: {**r, "id": "00" * 32},
        lambda r: {k: v for k, v in r.items() if k != "id"},
        lambda r: {**r, "kind": -1},
    ],
    ids=["wrong id", "no id", "bad kind"],
)
def test_wrapping_refuses_a_malformed_rumor(damage) -> None:
    with pytest.raises(GiftWrapError) as caught:
        wrap(damage(_rumor()), ALICE, BOB_PK, now=NOW)
    assert caught.value.reason == "bad_rumor"


@pytest.mark.parametrize("recipient", ["AB" * 32, "ab" * 31, 42])
def test_wrapping_refuses_a_malformed_recipient(recipient) -> None:
    with pytest.raises(GiftWrapError) as caught:
        wrap(_rumor(), ALICE, recipient, now=NOW)
    assert caught.value.reason == "bad_recipient"


def _rumor_of_json_size(size: int) -> dict:
    base = len(rumors.encode(_rumor("")))
    return _rumor("x" * (size - base))


def test_a_rumor_over_nip44s_limit_is_refused_naming_its_size() -> None:
    rumor = _rumor_of_json_size(MAX_PLAINTEXT_BYTES + 1)
    with pytest.raises(GiftWrapError, match=f"rumor is {MAX_PLAINTEXT_BYTES + 1} bytes") as caught:
        wrap(rumor, ALICE, BOB_PK, now=NOW)
    assert caught.value.reason == "too_large"


def test_the_seal_overflows_first_one_byte_past_max_rumor_bytes() -> None:
    with pytest.raises(
        GiftWrapError, match=f"seal of a {MAX_RUMOR_BYTES + 1}-byte rumor is 6[0-9]{{4}} bytes"
    ) as caught:
        wrap(_rumor_of_json_size(MAX_RUMOR_BYTES + 1), ALICE, BOB_PK, now=NOW)
    assert caught.value.reason == "too_large"


def test_a_rumor_of_max_rumor_bytes_fits_and_rust_nostr_opens_it() -> None:
    rumor = _rumor_of_json_size(MAX_RUMOR_BYTES)
    gift = wrap(rumor, ALICE, BOB_PK, now=NOW)
    assert unwrap(gift, BOB).rumor == rumor
    opened = nostr_sdk.UnwrappedGift.from_gift_wrap(_keys(BOB), nostr_sdk.Event.from_json(json.dumps(gift)))
    assert json.loads(opened.rumor().as_json()) == rumor


# --- refusals when unwrapping ----------------------------------------------------------------


def _reason(gift: dict | str, key: bytes = BOB) -> str:
    with pytest.raises(GiftWrapError) as caught:
        unwrap(gift, key)
    return caught.value.reason


def test_a_wrap_for_someone_else_is_refused() -> None:
    carol = nostr.generate_secret_key()
    gift = wrap(_rumor(), ALICE, BOB_PK, now=NOW)
    assert _reason(gift, carol) == "not_addressed_to_us"
    untagged = nostr.sign_event({**gift, "tags": [["p", ALICE_PK]]}, nostr.generate_secret_key())
    assert _reason(untagged) == "not_addressed_to_us"


def test_an_altered_or_unsigned_wrap_is_refused() -> None:
    gift = wrap(_rumor(), ALICE, BOB_PK, now=NOW)
    assert _reason({**gift, "created_at": gift["created_at"] + 1}) == "bad_wrap"
    assert _reason({**gift, "sig": "00" * 64}) == "bad_wrap"
    assert _reason("not json") == "bad_wrap"


def test_a_wrap_of_another_kind_is_refused() -> None:
    gift = wrap(_rumor(), ALICE, BOB_PK, now=NOW)
    resigned = nostr.sign_event({**gift, "kind": 1058}, nostr.generate_secret_key())
    assert _reason(resigned) == "wrong_kind"


def test_content_that_does_not_decrypt_is_refused() -> None:
    gift = wrap(_rumor(), ALICE, BOB_PK, now=NOW)
    other = nip44.encrypt("x", nip44.conversation_key(ALICE, bytes.fromhex(ALICE_PK)))
    assert _reason(nostr.sign_event({**gift, "content": other}, nostr.generate_secret_key())) == "undecryptable"


def test_a_seal_with_tags_wrong_kind_or_bad_signature_is_refused() -> None:
    gift = wrap(_rumor(), ALICE, BOB_PK, now=NOW)

    def tagged(seal: dict) -> dict:
        return _sealed(json.dumps(_rumor()), tags=[["p", BOB_PK]])

    def other_kind(seal: dict) -> dict:
        return _sealed(json.dumps(_rumor()), kind=14)

    def forged(seal: dict) -> dict:
        return {**seal, "sig": "11" * 64}

    assert _reason(_reseal(gift, BOB, tagged)) == "seal_has_tags"
    assert _reason(_reseal(gift, BOB, other_kind)) == "wrong_kind"
    assert _reason(_reseal(gift, BOB, forged)) == "bad_seal"


def test_a_rumor_not_written_by_its_sealer_is_refused() -> None:
    gift = wrap(_rumor(), ALICE, BOB_PK, now=NOW)
    mallory = nostr.generate_secret_key()

    def resealed_by_mallory(seal: dict) -> dict:
        return _sealed(json.dumps(_rumor()), signer=mallory)

    assert _reason(_reseal(gift, BOB, resealed_by_mallory)) == "sender_mismatch"


def test_a_sealed_rumor_with_a_wrong_id_is_refused() -> None:
    gift = wrap(_rumor(), ALICE, BOB_PK, now=NOW)

    def wrong_id(seal: dict) -> dict:
        return _sealed(json.dumps({**_rumor(), "id": "00" * 32}))

    assert _reason(_reseal(gift, BOB, wrong_id)) == "bad_rumor"


# --- rust-nostr (nostr-sdk) ------------------------------------------------------------------


def _keys(secret: bytes) -> nostr_sdk.Keys:
    return nostr_sdk.Keys(nostr_sdk.SecretKey.from_bytes(secret))


def test_nostr_sdk_unwraps_ours() -> None:
    rumor = _rumor("from tessera", tags=[["e", "cd" * 32], ["relays", "wss://a.example", "wss://b.example"]])
    gift = wrap(rumor, ALICE, BOB_PK, now=NOW)
    opened = nostr_sdk.UnwrappedGift.from_gift_wrap(_keys(BOB), nostr_sdk.Event.from_json(json.dumps(gift)))
    assert opened.sender().to_hex() == ALICE_PK
    assert json.loads(opened.rumor().as_json()) == rumor


def test_we_unwrap_nostr_sdks() -> None:
    rumor = _rumor("from rust-nostr", tags=[["e", "ef" * 32], ["client", "x"]])
    theirs = nostr_sdk.nip59_make_gift_wrap(
        _keys(ALICE), nostr_sdk.PublicKey.parse(BOB_PK), nostr_sdk.UnsignedEvent.from_json(json.dumps(rumor))
    )
    opened = unwrap(theirs.as_json(), BOB)
    assert opened.rumor == rumor
    assert opened.sender_pubkey == ALICE_PK
    assert opened.wrapper_id == theirs.id().to_hex()


def test_nostr_sdk_fills_in_a_missing_rumor_id_which_we_then_check() -> None:
    rumor = _rumor()
    without_id = nostr_sdk.UnsignedEvent.from_json(json.dumps({k: v for k, v in rumor.items() if k != "id"}))
    theirs = nostr_sdk.nip59_make_gift_wrap(_keys(ALICE), nostr_sdk.PublicKey.parse(BOB_PK), without_id)
    assert unwrap(theirs.as_json(), BOB).rumor == rumor


def test_seal_content_is_nip44_that_nostr_sdk_reads_and_writes() -> None:
    seal = _open(wrap(_rumor(), ALICE, BOB_PK, now=NOW), BOB)
    theirs = nostr_sdk.nip44_decrypt(_keys(BOB).secret_key(), nostr_sdk.PublicKey.parse(ALICE_PK), seal["content"])
    assert json.loads(theirs) == _rumor()
    written = nostr_sdk.nip44_encrypt(
        _keys(ALICE).secret_key(), nostr_sdk.PublicKey.parse(BOB_PK), "seal me", nostr_sdk.Nip44Version.V2
    )
    assert nip44.decrypt(written, nip44.conversation_key(BOB, bytes.fromhex(ALICE_PK))) == b"seal me"


def test_rust_nostr_encrypts_at_most_65408_bytes_but_reads_up_to_65535() -> None:
    secret, public = _keys(ALICE).secret_key(), nostr_sdk.PublicKey.parse(BOB_PK)
    nostr_sdk.nip44_encrypt(secret, public, "x" * RUST_NOSTR_MAX_PLAINTEXT_BYTES, nostr_sdk.Nip44Version.V2)
    with pytest.raises(Exception, match="message too long"):
        nostr_sdk.nip44_encrypt(secret, public, "x" * (RUST_NOSTR_MAX_PLAINTEXT_BYTES + 1), nostr_sdk.Nip44Version.V2)
    ours = nip44.encrypt(b"y" * MAX_PLAINTEXT_BYTES, nip44.conversation_key(ALICE, bytes.fromhex(BOB_PK)))
    assert len(nostr_sdk.nip44_decrypt(_keys(BOB).secret_key(), nostr_sdk.PublicKey.parse(ALICE_PK), ours)) == 65535
