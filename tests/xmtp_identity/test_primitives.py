"""The primitives under the checks: EIP-191 recovery against a published vector, inbox ids as libxmtp derives them."""

from __future__ import annotations

import os
from collections.abc import Callable

import coincurve
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.libraries.xmtp_identity import ETHEREUM, PASSKEY, Identifier, Refused, inbox_id_for
from protocols.libraries.xmtp_identity.ethereum import (
    SECP256K1_ORDER,
    address_of,
    personal_sign_hash,
    recover_signer,
)
from tests.xmtp_identity.capture import Captured
from tests.xmtp_node.libxmtp_peer import LibxmtpClient

# The "Sign a Message" example of the web3.py / eth-account documentation:
# Account.sign_message(encode_defunct(text="I♥SF"), private_key=...) gives this message hash and signature
# (v = 28), and the key's address is 0x5ce9454909639D2D17A3F753ce7d93fa0b9aB12E.
VECTOR_KEY = bytes.fromhex("b25c7db31feed9122727bf0939dc769a96564b2de4c4726d035b36ecf1e5b364")
VECTOR_TEXT = "I♥SF"
VECTOR_HASH = bytes.fromhex("1476abb745d423bf09273f1afd887d951181d25adc66c4834a70491911b7f750")
VECTOR_SIGNATURE = bytes.fromhex(
    "e6ca9bba58c88611fad66a6ce8f996908195593807c4b38bd528d2cff09d4eb3"
    "3e5bfbbf4d3e39b1a2fd816a7680c19ebebaf3a141b239934ad43cb33fcec8ce1c"
)
VECTOR_ADDRESS = "0x5ce9454909639d2d17a3f753ce7d93fa0b9ab12e"


def test_eip191_recovers_the_documented_signer() -> None:
    assert personal_sign_hash(VECTOR_TEXT) == VECTOR_HASH
    assert address_of(coincurve.PrivateKey(VECTOR_KEY).public_key.format()) == VECTOR_ADDRESS
    assert recover_signer(VECTOR_TEXT, VECTOR_SIGNATURE) == (VECTOR_ADDRESS, VECTOR_SIGNATURE)


def test_every_way_of_writing_v_recovers_the_same_signer_and_is_the_same_signature() -> None:
    """0/1, 27/28 and EIP-155's 35 + 2 * chain + parity: one signature, so reusing it another way is a replay."""
    parity = VECTOR_SIGNATURE[64] - 27
    for v in (parity, 27 + parity, 35 + 2 * 1 + parity, 35 + 2 * 5 + parity):
        assert recover_signer(VECTOR_TEXT, VECTOR_SIGNATURE[:64] + bytes([v])) == (VECTOR_ADDRESS, VECTOR_SIGNATURE)


def test_another_text_recovers_another_address() -> None:
    address, _ = recover_signer(VECTOR_TEXT + ".", VECTOR_SIGNATURE)
    assert address != VECTOR_ADDRESS


def test_a_high_s_signature_is_normalised_and_keeps_its_v() -> None:
    """libxmtp's ``to_lower_s``: (r, n - s, v) is stored and recovered as (r, s, v), the original signature."""
    s = int.from_bytes(VECTOR_SIGNATURE[32:64], "big")
    high = VECTOR_SIGNATURE[:32] + (SECP256K1_ORDER - s).to_bytes(32, "big") + VECTOR_SIGNATURE[64:]
    address, normalised = recover_signer(VECTOR_TEXT, high)
    assert normalised == VECTOR_SIGNATURE
    assert address == VECTOR_ADDRESS


@pytest.mark.parametrize(
    "signature",
    [
        b"",
        VECTOR_SIGNATURE[:64],
        VECTOR_SIGNATURE + b"\x00",
        bytes(32) + VECTOR_SIGNATURE[32:],
        VECTOR_SIGNATURE[:32] + bytes(32) + VECTOR_SIGNATURE[64:],
        VECTOR_SIGNATURE[:32] + SECP256K1_ORDER.to_bytes(32, "big") + VECTOR_SIGNATURE[64:],
        VECTOR_SIGNATURE[:64] + b"\x05",
    ],
)
def test_malformed_signatures_are_refused(signature: bytes) -> None:
    with pytest.raises(Refused) as caught:
        recover_signer(VECTOR_TEXT, signature)
    assert caught.value.reason == "bad_signature"


@given(st.binary(min_size=65, max_size=65), st.text(max_size=200))
def test_any_65_bytes_recover_an_address_or_are_refused(signature: bytes, text: str) -> None:
    try:
        address, _ = recover_signer(text, signature)
    except Refused:
        return
    assert len(address) == 42 and address == address.lower()


def test_inbox_ids_match_what_libxmtp_derived(captured: Captured) -> None:
    assert len(captured.derived_inbox_ids) >= 12
    for address, nonce, inbox_id in captured.derived_inbox_ids:
        assert inbox_id_for(Identifier(ETHEREUM, address), nonce) == inbox_id


def test_inbox_id_derivation_refuses_what_libxmtp_refuses() -> None:
    for bad in ("", "0x123", "0x" + "g" * 40, "ab" * 21, "0x" + "a" * 41):
        with pytest.raises(Refused):
            inbox_id_for(Identifier(ETHEREUM, bad), 0)
    with pytest.raises(Refused):
        inbox_id_for(Identifier(ETHEREUM, "0x" + "a" * 40), 2**64)
    # a passkey's id is its key in hex, whatever it holds
    assert len(inbox_id_for(Identifier(PASSKEY, "04" + "11" * 64), 0)) == 64


@pytest.mark.peer
def test_inbox_ids_match_libxmtp_for_fresh_addresses_and_nonces(libxmtp_client: Callable[[str], LibxmtpClient]) -> None:
    client = libxmtp_client("deriver")
    for nonce in (0, 1, 2**32, 2**64 - 1):
        address = "0x" + os.urandom(20).hex()
        expected = client.call("generate_inbox_id", address=address, nonce=nonce)
        assert inbox_id_for(Identifier(ETHEREUM, address), nonce) == expected
