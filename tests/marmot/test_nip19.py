"""NIP-19 key texts: BIP-173's bech32 vectors, NIP-19's own examples, and rust-nostr as a second opinion."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import InvalidInput
from protocols.marmot.wire import nip19

# BIP-173, "Test vectors": strings with a valid bech32 checksum.
BIP173_VALID = [
    "A12UEL5L",
    "a12uel5l",
    "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
    "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
    "11" + "q" * 82 + "c8247j",
    "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w",
    "?1ezyfcl",
]
# BIP-173, "Test vectors": strings that must be refused, with what is wrong.
BIP173_INVALID = [
    "\x201nwldj5",  # a prefix character out of range
    "\x7f1axkwrx",  # a prefix character out of range
    "pzry9x0s0muk",  # no separator
    "1pzry9x0s0muk",  # empty prefix
    "x1b4n0q5v",  # 'b' is not a bech32 character
    "li1dgmt3",  # checksum too short
    "de1lg7wt\xff",  # a checksum character out of range
    "A1G7SGD8",  # checksum made with the upper-case prefix
    "10a06t8",  # empty prefix
    "1qzzfhee",  # empty prefix
]
# NIP-19, "Examples".
NIP19_PUBLIC = (
    "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg",
    "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e",
)
NIP19_SECRET = (
    "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5",
    "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa",
)

keys = st.binary(min_size=32, max_size=32)


@pytest.mark.parametrize("text", BIP173_VALID)
def test_bip173_valid_strings_decode_and_encode_back(text):
    prefix, data = nip19.decode(text)
    assert prefix == text.lower().rpartition("1")[0]
    assert nip19.encode(prefix, data) == text.lower()


@pytest.mark.parametrize("text", BIP173_INVALID)
def test_bip173_invalid_strings_are_refused(text):
    with pytest.raises(nip19.InvalidBech32):
        nip19.decode(text)


def test_mixed_case_is_refused():
    with pytest.raises(nip19.InvalidBech32, match="mixes upper and lower case"):
        nip19.decode("A12uEL5L")


def test_nip19_examples():
    npub, pubkey = NIP19_PUBLIC
    nsec, secret = NIP19_SECRET
    assert nip19.npub(pubkey) == npub and nip19.public_key_hex(npub) == pubkey
    assert nip19.nsec(bytes.fromhex(secret)) == nsec and nip19.secret_key_bytes(nsec).hex() == secret
    assert nip19.public_key_hex(npub.upper()) == pubkey and nip19.public_key_hex(f"  {pubkey.upper()}\n") == pubkey


@pytest.fixture(scope="module")
def nostr_sdk():
    """rust-nostr, imported before the property's first example: importing it can take longer than hypothesis's
    deadline, and whether an earlier test in this process imported it depends on how the run was split."""
    return pytest.importorskip("nostr_sdk")


@given(keys)
def test_keys_round_trip_and_agree_with_rust_nostr(nostr_sdk, key):
    text = nip19.npub(key.hex())
    assert nip19.public_key_hex(text) == key.hex()
    assert nip19.secret_key_bytes(nip19.nsec(key)) == key
    assert nostr_sdk.PublicKey.from_bytes(key).to_bech32() == text


@given(keys, st.integers(min_value=5, max_value=62), st.sampled_from(nip19.ALPHABET))
def test_any_one_mistyped_character_is_caught(key, position, replacement):
    text = nip19.npub(key.hex())
    mistyped = text[:position] + replacement + text[position + 1 :]
    if mistyped != text:
        with pytest.raises(nip19.InvalidBech32):
            nip19.public_key_hex(mistyped)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nobody", "not a public key"),
        (NIP19_SECRET[0], "not a public key"),
        (nip19.encode("npub", b"\x01" * 31), "holds 31 bytes"),
        ("ab" * 31, "not a public key"),
    ],
)
def test_what_is_not_a_public_key_says_why(text, message):
    with pytest.raises(InvalidInput, match=message):
        nip19.public_key_hex(text)


def test_a_damaged_secret_key_is_refused_without_repeating_it():
    nsec = NIP19_SECRET[0]
    damaged = nsec[:-1] + ("q" if nsec[-1] != "q" else "p")
    with pytest.raises(nip19.InvalidBech32) as refused:
        nip19.secret_key_bytes(damaged)
    assert damaged not in str(refused.value) and damaged[5:20] not in str(refused.value)
