"""NIP-44 v2: every official vector, plus round-trip and tamper properties."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import InvalidInput
from protocols.marmot.errors import (
    InvalidKey,
    InvalidMac,
    InvalidPadding,
    InvalidPayload,
    InvalidPlaintextLength,
    Nip44Error,
)
from protocols.marmot.wire import nip44
from protocols.marmot.wire.nostr import public_key_xonly
from tests.helpers import VECTORS

V2 = json.loads((VECTORS / "nip44.vectors.json").read_text("utf-8"))["v2"]
VALID = V2["valid"]
INVALID = V2["invalid"]

h = bytes.fromhex


def _ids(cases, key):
    return [f"{i}-{str(c[key])[:12]}" for i, c in enumerate(cases)]


# --- valid vectors --------------------------------------------------------------


@pytest.mark.parametrize("case", VALID["get_conversation_key"], ids=_ids(VALID["get_conversation_key"], "sec1"))
def test_conversation_key(case):
    key = nip44.conversation_key(h(case["sec1"]), h(case["pub2"]))
    assert key.hex() == case["conversation_key"]


_MK = VALID["get_message_keys"]


@pytest.mark.parametrize("case", _MK["keys"], ids=_ids(_MK["keys"], "nonce"))
def test_message_keys(case):
    chacha_key, chacha_nonce, hmac_key = nip44.message_keys(h(_MK["conversation_key"]), h(case["nonce"]))
    assert chacha_key.hex() == case["chacha_key"]
    assert chacha_nonce.hex() == case["chacha_nonce"]
    assert hmac_key.hex() == case["hmac_key"]


@pytest.mark.parametrize("n, expected", VALID["calc_padded_len"])
def test_calc_padded_len(n, expected):
    assert nip44.calc_padded_len(n) == expected


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_calc_padded_len_rejects_non_lengths(bad):
    with pytest.raises(InvalidPlaintextLength):
        nip44.calc_padded_len(bad)


@pytest.mark.parametrize("case", VALID["encrypt_decrypt"], ids=_ids(VALID["encrypt_decrypt"], "plaintext"))
def test_encrypt_decrypt(case):
    sec1, sec2 = h(case["sec1"]), h(case["sec2"])
    key = nip44.conversation_key(sec1, public_key_xonly(sec2))
    assert key.hex() == case["conversation_key"]
    # The key is symmetric: the other side derives the same one.
    assert nip44.conversation_key(sec2, public_key_xonly(sec1)) == key
    payload = nip44.encrypt(case["plaintext"], key, h(case["nonce"]))
    assert payload == case["payload"]
    assert nip44.decrypt(case["payload"], key) == case["plaintext"].encode("utf-8")


@pytest.mark.parametrize(
    "case",
    VALID["encrypt_decrypt_long_msg"],
    ids=_ids(VALID["encrypt_decrypt_long_msg"], "conversation_key"),
)
def test_encrypt_decrypt_long_msg(case):
    plaintext = (case["pattern"] * case["repeat"]).encode("utf-8")
    assert hashlib.sha256(plaintext).hexdigest() == case["plaintext_sha256"]
    key = h(case["conversation_key"])
    payload = nip44.encrypt(plaintext, key, h(case["nonce"]))
    assert hashlib.sha256(payload.encode("ascii")).hexdigest() == case["payload_sha256"]
    assert nip44.decrypt(payload, key) == plaintext


# --- invalid vectors ------------------------------------------------------------------


@pytest.mark.parametrize("length", INVALID["encrypt_msg_lengths"])
def test_encrypt_rejects_length(length):
    key = bytes(range(32))
    with pytest.raises(InvalidPlaintextLength) as info:
        nip44.encrypt(b"a" * length, key)
    assert isinstance(info.value, InvalidInput)


@pytest.mark.parametrize(
    "case", INVALID["get_conversation_key"], ids=[c["note"] for c in INVALID["get_conversation_key"]]
)
def test_conversation_key_rejects(case):
    with pytest.raises(InvalidKey) as info:
        nip44.conversation_key(h(case["sec1"]), h(case["pub2"]))
    expected = "bad_secret_key" if case["note"].startswith("sec1") else "bad_public_key"
    assert info.value.reason == expected


def _expected_failure(note: str) -> tuple[type[Nip44Error], str]:
    if note.startswith("unknown encryption version"):
        return InvalidPayload, "unsupported_version"
    if note == "invalid base64":
        return InvalidPayload, "bad_base64"
    if note.startswith("invalid payload length"):
        return InvalidPayload, "bad_length"
    if note == "invalid MAC":
        return InvalidMac, "bad_mac"
    if note == "invalid padding":
        return InvalidPadding, "bad_padding"
    raise AssertionError(f"vector note not mapped: {note}")


@pytest.mark.parametrize("case", INVALID["decrypt"], ids=_ids(INVALID["decrypt"], "note"))
def test_decrypt_rejects(case):
    cls, reason = _expected_failure(case["note"])
    with pytest.raises(Nip44Error) as info:
        nip44.decrypt(case["payload"], h(case["conversation_key"]))
    assert type(info.value) is cls
    assert info.value.reason == reason


# --- properties --------------------------------------------------------------------------

_CURVE_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_secret_keys = st.integers(1, _CURVE_ORDER - 1).map(lambda k: k.to_bytes(32, "big"))
_plaintexts = st.one_of(
    st.binary(min_size=1, max_size=2000),
    st.integers(65500, 65535).map(lambda n: bytes([n % 251]) * n),
)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(plaintext=_plaintexts, sec_a=_secret_keys, sec_b=_secret_keys)
def test_round_trip(plaintext, sec_a, sec_b):
    key_ab = nip44.conversation_key(sec_a, public_key_xonly(sec_b))
    key_ba = nip44.conversation_key(sec_b, public_key_xonly(sec_a))
    assert key_ab == key_ba
    payload = nip44.encrypt(plaintext, key_ab)
    assert nip44.decrypt(payload, key_ba) == plaintext
    # Padding hides the exact length: the payload size depends only on the padded size.
    data_len = len(base64.b64decode(payload))
    assert data_len == 1 + 32 + 2 + nip44.calc_padded_len(len(plaintext)) + 32


def test_random_nonce_differs_each_time():
    key = bytes(range(32))
    assert nip44.encrypt("same", key) != nip44.encrypt("same", key)


def test_wrong_key_is_rejected():
    payload = nip44.encrypt(b"secret", bytes(32))
    with pytest.raises(InvalidMac):
        nip44.decrypt(payload, bytes([1]) * 32)


def _tamper_payload():
    key = h(VALID["encrypt_decrypt"][0]["conversation_key"])
    return key, nip44.encrypt(b"tamper me, please" * 3, key, bytes(range(32)))


def test_tamper_any_decoded_byte():
    key, payload = _tamper_payload()
    data = base64.b64decode(payload)
    for i in range(len(data)):
        for mask in (0x01, 0x80):
            altered = bytearray(data)
            altered[i] ^= mask
            with pytest.raises(Nip44Error) as info:
                nip44.decrypt(base64.b64encode(altered).decode(), key)
            # Only the version byte is read before the MAC is checked.
            assert type(info.value) is (InvalidPayload if i == 0 else InvalidMac)


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def test_tamper_any_payload_character():
    key, payload = _tamper_payload()
    assert payload.endswith("=")  # makes the last data character carry unused bits
    for i, char in enumerate(payload):
        if char == "=":
            continue
        # A few replacements per position: neighbours and low-bit flips in the alphabet.
        index = _B64.index(char)
        for replacement in {_B64[index ^ 1], _B64[index ^ 2], _B64[(index + 17) % 64], "#"}:
            altered = payload[:i] + replacement + payload[i + 1 :]
            with pytest.raises(Nip44Error):
                nip44.decrypt(altered, key)


def test_non_canonical_base64_is_rejected():
    key, payload = _tamper_payload()
    body = payload.rstrip("=")
    last = _B64.index(body[-1])
    respelled = body[:-1] + _B64[last | 1] + payload[len(body) :]
    assert respelled != payload
    assert base64.b64decode(respelled) == base64.b64decode(payload)  # Python alone would accept it
    with pytest.raises(InvalidPayload) as info:
        nip44.decrypt(respelled, key)
    assert info.value.reason == "bad_base64"


@pytest.mark.parametrize(
    "payload, reason",
    [
        (b"Ag==" * 40, "bad_base64"),
        ("A" * 87476, "bad_length"),
        ("A" * 131, "bad_length"),
        ("AA" + " " * 130, "bad_base64"),
    ],
)
def test_decrypt_rejects_malformed(payload, reason):
    with pytest.raises(InvalidPayload) as info:
        nip44.decrypt(payload, bytes(32))
    assert info.value.reason == reason


@pytest.mark.parametrize("key", [b"", bytes(31), bytes(33), "00" * 32, None])
def test_bad_conversation_key(key):
    with pytest.raises(InvalidKey):
        nip44.encrypt(b"x", key)
    with pytest.raises(InvalidKey):
        nip44.decrypt(VALID["encrypt_decrypt"][0]["payload"], key)


def test_bad_nonce():
    with pytest.raises(Nip44Error) as info:
        nip44.encrypt(b"x", bytes(32), bytes(16))
    assert info.value.reason == "bad_nonce"


def test_str_plaintext_with_lone_surrogate():
    with pytest.raises(Nip44Error):
        nip44.encrypt("\ud800", bytes(32))


# --- group keys ------------------------------------------------------------------------


def test_group_conversation_key_is_shared_and_usable():
    exporter = hashlib.sha256(b"epoch 7 exporter secret").digest()
    key = nip44.group_conversation_key(exporter)
    # Deterministic: every member holding the exporter secret gets the same key.
    assert nip44.group_conversation_key(bytes(exporter)) == key
    assert key == nip44.conversation_key(exporter, public_key_xonly(exporter))
    payload = nip44.encrypt("hello group", key)
    assert nip44.decrypt(payload, nip44.group_conversation_key(exporter)) == b"hello group"
    other = nip44.group_conversation_key(hashlib.sha256(b"epoch 8").digest())
    with pytest.raises(InvalidMac):
        nip44.decrypt(payload, other)


@pytest.mark.parametrize(
    "exporter",
    [bytes(32), b"\xff" * 32, h(INVALID["get_conversation_key"][3]["sec1"]), bytes(16)],
    ids=["zero", "all-ff", "order", "short"],
)
def test_group_conversation_key_rejects_invalid_scalar(exporter):
    with pytest.raises(InvalidKey):
        nip44.group_conversation_key(exporter)


def test_error_hierarchy():
    for cls in (InvalidPayload, InvalidMac, InvalidPadding, InvalidPlaintextLength, InvalidKey):
        assert issubclass(cls, Nip44Error)
        assert issubclass(cls, InvalidInput)
        assert issubclass(cls, ValueError)
