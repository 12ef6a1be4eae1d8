"""Accounts, installations and bindings: published Ethereum vectors, round trips, and hostile input."""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import InvalidInput
from protocols.libraries.xmtp_identity.ethereum import SECP256K1_ORDER, keccak256, personal_message_digest
from protocols.xmtp.errors import InvalidAddress, InvalidBinding, InvalidKey, XmtpError
from protocols.xmtp.identity import (
    BINDING_TITLE,
    MAX_BINDING_BYTES,
    AccountKey,
    InstallationBinding,
    InstallationKey,
    bind,
    binding_text,
    checksum_address,
    parse_address,
    recover_signer,
    verify,
)
from tests.helpers import VECTORS

EIP55 = json.loads((VECTORS / "eip55.json").read_text("utf-8"))
ACCOUNTS = json.loads((VECTORS / "eth_accounts.json").read_text("utf-8"))["accounts"]
PERSONAL_SIGN = json.loads((VECTORS / "eth_personal_sign.json").read_text("utf-8"))

EIP55_ADDRESSES = [(group, address) for group in ("all_caps", "all_lower", "normal") for address in EIP55[group]]

h = bytes.fromhex

#: A fixed identity, so that the tables below are the same on every run.
ALICE = AccountKey.from_bytes(h("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"))
BOB = AccountKey.from_bytes((1).to_bytes(32, "big"))
PHONE = InstallationKey.from_bytes(bytes(range(32)))
LAPTOP = InstallationKey.from_bytes(bytes(range(32, 64)))
CREATED = 1_700_000_000
ALICE_PHONE = bind(ALICE, PHONE, CREATED)
ALICE_LAPTOP = bind(ALICE, LAPTOP, CREATED)
BOB_PHONE = bind(BOB, PHONE, CREATED)

account_secrets = st.integers(1, SECP256K1_ORDER - 1).map(lambda scalar: scalar.to_bytes(32, "big"))
installation_seeds = st.binary(min_size=32, max_size=32)
timestamps = st.integers(0, 2**63 - 1)


def _ids(cases: list[dict[str, Any]], key: str) -> list[str]:
    return [f"{i}-{str(case[key])[:12]}" for i, case in enumerate(cases)]


def _with_case_of_letter_flipped(address: str, index: int) -> str:
    return address[:index] + address[index].swapcase() + address[index + 1 :]


def _with_first_letter_recased(address: str) -> str:
    first_letter = next(i for i, c in enumerate(address) if i >= 2 and c.isalpha())
    return _with_case_of_letter_flipped(address, first_letter)


# --- EIP-55 -------------------------------------------------------------------------


@pytest.mark.parametrize(("group", "address"), EIP55_ADDRESSES, ids=[f"{g}-{a[:10]}" for g, a in EIP55_ADDRESSES])
def test_eip55_vectors_are_their_own_checksummed_form(group: str, address: str) -> None:
    assert checksum_address(h(address[2:])) == address
    assert parse_address(address) == address


@pytest.mark.parametrize(("group", "address"), EIP55_ADDRESSES, ids=[f"{g}-{a[:10]}" for g, a in EIP55_ADDRESSES])
def test_eip55_vectors_in_one_case_are_accepted_without_a_checksum(group: str, address: str) -> None:
    digits = address[2:]
    assert parse_address("0x" + digits.lower()) == address
    assert parse_address("0x" + digits.upper()) == address


@pytest.mark.parametrize(("group", "address"), EIP55_ADDRESSES, ids=[f"{g}-{a[:10]}" for g, a in EIP55_ADDRESSES])
def test_eip55_vectors_with_any_one_letter_recased_are_refused(group: str, address: str) -> None:
    letters = [i for i, c in enumerate(address) if i >= 2 and c.isalpha()]
    assert letters
    for index in letters:
        with pytest.raises(InvalidAddress, match="checksum"):
            parse_address(_with_case_of_letter_flipped(address, index))


def test_keccak256_is_ethereums_keccak_not_nist_sha3() -> None:
    # From TestKeccak256Hash in go-ethereum's crypto/crypto_test.go.
    expected = h("4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45")
    assert keccak256(b"abc") == expected
    assert hashlib.sha3_256(b"abc").digest() != expected


# --- accounts ------------------------------------------------------------------------


@pytest.mark.parametrize("case", ACCOUNTS, ids=_ids(ACCOUNTS, "source"))
def test_private_key_gives_the_published_address(case: dict[str, str]) -> None:
    account = AccountKey.from_bytes(h(case["private_key"]))
    assert account.address == parse_address(case["address"])
    assert account.address.lower() == case["address"].lower()


def test_private_key_one_gives_the_widely_published_checksummed_address() -> None:
    assert BOB.address == "0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf"


def test_account_key_round_trips_through_its_32_bytes() -> None:
    account = AccountKey.generate()
    again = AccountKey.from_bytes(account.to_bytes())
    assert len(account.to_bytes()) == 32
    assert again.address == account.address
    assert again.to_bytes() == account.to_bytes()
    assert AccountKey.generate().address != account.address


@pytest.mark.parametrize(
    "secret",
    [
        b"",
        b"\x01" * 31,
        b"\x01" * 33,
        bytes(32),
        SECP256K1_ORDER.to_bytes(32, "big"),
        (SECP256K1_ORDER + 1).to_bytes(32, "big"),
        b"\xff" * 32,
        "01" * 32,
    ],
    ids=["empty", "31-bytes", "33-bytes", "zero", "order", "order+1", "all-ff", "hex-text"],
)
def test_account_key_refuses_bad_secrets(secret: Any) -> None:
    with pytest.raises(InvalidKey):
        AccountKey.from_bytes(secret)


def test_keys_keep_their_secrets_out_of_repr() -> None:
    assert ALICE.to_bytes().hex() not in repr(ALICE)
    assert ALICE.address in repr(ALICE)
    assert PHONE.to_bytes().hex() not in repr(PHONE)
    assert PHONE.installation_id in repr(PHONE)


# --- installations -----------------------------------------------------------------------


def test_installation_id_is_the_ed25519_public_key_in_lowercase_hex() -> None:
    # RFC 8032, section 7.1, TEST 1: the secret key and the public key it gives.
    installation = InstallationKey.from_bytes(h("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
    assert installation.installation_id == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    assert installation.public_key == h(installation.installation_id)


def test_installation_key_round_trips_through_its_seed() -> None:
    installation = InstallationKey.generate()
    again = InstallationKey.from_bytes(installation.to_bytes())
    assert again.installation_id == installation.installation_id
    assert InstallationKey.generate().installation_id != installation.installation_id


@pytest.mark.parametrize("seed", [b"", b"\x00" * 31, b"\x00" * 33, "00" * 32], ids=["empty", "31", "33", "hex-text"])
def test_installation_key_refuses_seeds_of_the_wrong_size(seed: Any) -> None:
    with pytest.raises(InvalidKey):
        InstallationKey.from_bytes(seed)


# --- personal_sign ---------------------------------------------------------------------


@pytest.mark.parametrize("case", PERSONAL_SIGN["sign"], ids=_ids(PERSONAL_SIGN["sign"], "message"))
def test_personal_sign_gives_the_published_signature(case: dict[str, str]) -> None:
    account = AccountKey.from_bytes(h(case["private_key"]))
    message = case["message"].encode("utf-8")
    assert account.address == case["address"]
    assert personal_message_digest(message) == h(case["digest"])
    assert account.personal_sign(message) == h(case["signature"])
    assert recover_signer(message, h(case["signature"])) == case["address"]


@pytest.mark.parametrize("case", PERSONAL_SIGN["recover"], ids=_ids(PERSONAL_SIGN["recover"], "message"))
def test_recover_signer_gives_the_published_address(case: dict[str, str]) -> None:
    assert recover_signer(case["message"].encode("utf-8"), h(case["signature"])) == case["address"]


@pytest.mark.parametrize("case", PERSONAL_SIGN["digest"], ids=_ids(PERSONAL_SIGN["digest"], "message"))
def test_personal_message_digest_matches_the_published_one(case: dict[str, str]) -> None:
    assert personal_message_digest(case["message"].encode("utf-8")) == h(case["digest"])


@settings(max_examples=50, deadline=None)
@given(account_secrets, st.binary(max_size=300))
def test_personal_sign_recovers_to_the_signer(secret: bytes, message: bytes) -> None:
    account = AccountKey.from_bytes(secret)
    signature = account.personal_sign(message)
    assert len(signature) == 65
    assert signature[64] in (27, 28)
    assert recover_signer(message, signature) == account.address


def _high_s_twin(signature: bytes) -> bytes:
    """The other signature that ECDSA verification accepts for the same message: s -> n - s, parity flipped."""
    s = int.from_bytes(signature[32:64], "big")
    return signature[:32] + (SECP256K1_ORDER - s).to_bytes(32, "big") + bytes([55 - signature[64]])


_SIGNED = ALICE.personal_sign(b"hello")
_FIELD_PRIME = 2**256 - 2**32 - 977
#: The smallest r that is no point's x coordinate on secp256k1 (x**3 + 7 has no square root), so nothing recovers.
_R_OFF_THE_CURVE = next(x for x in range(1, 100) if pow(x**3 + 7, (_FIELD_PRIME - 1) // 2, _FIELD_PRIME) != 1)


@pytest.mark.parametrize(
    ("signature", "reason"),
    [
        (_SIGNED[:64], "65 bytes"),
        (_SIGNED + b"\x00", "65 bytes"),
        (b"", "65 bytes"),
        (_SIGNED[:64] + bytes([29]), "27 or 28"),
        (_SIGNED[:64] + bytes([0]), "27 or 28"),
        (_SIGNED[:64] + bytes([1]), "27 or 28"),
        (bytes(65), "27 or 28"),
        (bytes(64) + bytes([27]), "r must"),
        (SECP256K1_ORDER.to_bytes(32, "big") + _SIGNED[32:], "r must"),
        (_SIGNED[:32] + bytes(32) + _SIGNED[64:], "s must"),
        (_high_s_twin(_SIGNED), "s must"),
        (_SIGNED.hex(), "65 bytes"),
        (_R_OFF_THE_CURVE.to_bytes(32, "big") + _SIGNED[32:], "recovered"),
    ],
    ids=[
        "64-bytes",
        "66-bytes",
        "empty",
        "v-29",
        "v-0",
        "v-1",
        "all-zeros",
        "zero-r-and-s",
        "r-is-order",
        "zero-s",
        "high-s-twin",
        "hex-text",
        "r-not-on-curve",
    ],
)
def test_malformed_signatures_are_refused_with_a_typed_error(signature: Any, reason: str) -> None:
    with pytest.raises(InvalidBinding, match=reason):
        recover_signer(b"hello", signature)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=70))
def test_recover_signer_raises_nothing_untyped(signature: bytes) -> None:
    try:
        recovered = recover_signer(b"hello", signature)
    except InvalidBinding:
        return
    assert parse_address(recovered) == recovered


# --- addresses refused -----------------------------------------------------------------

_NORMAL = EIP55["normal"][0]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "does not start with 0x"),
        ("0x", "0 characters after 0x"),
        (_NORMAL[:-1], "39 characters"),
        (_NORMAL + "0", "41 characters"),
        (_NORMAL[2:], "does not start with 0x"),
        ("0X" + _NORMAL[2:], "does not start with 0x"),
        ("0x" + "g" + _NORMAL[3:], "not hex digits"),
        ("0x" + "٣" + _NORMAL[3:], "not hex digits"),
        (" " + _NORMAL, "does not start with 0x"),
        (_NORMAL + "\n", "41 characters"),
        (_with_first_letter_recased(_NORMAL), "checksum"),
        (_NORMAL.encode("ascii"), "not text"),
        (None, "not text"),
    ],
    ids=[
        "empty",
        "only-0x",
        "too-short",
        "too-long",
        "no-0x",
        "capital-0X",
        "non-hex",
        "non-ascii-digit",
        "leading-space",
        "trailing-newline",
        "bad-checksum",
        "bytes",
        "none",
    ],
)
def test_bad_addresses_are_refused_with_what_is_wrong(text: Any, reason: str) -> None:
    with pytest.raises(InvalidAddress, match=reason) as caught:
        parse_address(text)
    if reason != "checksum":
        assert "0x followed by 40 hex digits" in str(caught.value)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789abcdefABCDEFx ", max_size=44))
def test_parse_address_returns_a_checksummed_address_or_raises_invalid_address(text: str) -> None:
    try:
        parsed = parse_address(text)
    except InvalidAddress:
        return
    assert parsed.lower() == text.lower()
    assert checksum_address(h(parsed[2:])) == parsed


def test_identity_errors_are_typed_input_errors() -> None:
    assert issubclass(InvalidAddress, XmtpError)
    assert issubclass(InvalidBinding, InvalidInput)
    assert issubclass(InvalidKey, ValueError)


# --- bindings ----------------------------------------------------------------------------


def test_binding_text_names_project_account_installation_and_time() -> None:
    assert ALICE_PHONE.text.decode("utf-8").split("\n") == [
        BINDING_TITLE,
        f"address: {ALICE.address}",
        f"installation: {PHONE.installation_id}",
        f"created: {CREATED}",
    ]
    assert ALICE_PHONE.text == binding_text(ALICE.address, PHONE.installation_id, CREATED)


def test_a_binding_is_a_personal_sign_signature_any_wallet_can_check() -> None:
    assert recover_signer(ALICE_PHONE.text, ALICE_PHONE.signature) == ALICE.address
    assert ALICE_PHONE.signature == ALICE.personal_sign(ALICE_PHONE.text)


def test_binding_serializes_to_canonical_json() -> None:
    encoded = ALICE_PHONE.to_bytes()
    fields = json.loads(encoded)
    assert list(fields) == sorted(fields)
    assert fields == {
        "address": ALICE.address,
        "installation_id": PHONE.installation_id,
        "created_at": CREATED,
        "signature": ALICE_PHONE.signature.hex(),
    }
    assert encoded == json.dumps(fields, sort_keys=True, separators=(",", ":")).encode("ascii")
    assert InstallationBinding.from_bytes(encoded) == ALICE_PHONE


def test_binding_is_deterministic() -> None:
    assert bind(ALICE, PHONE, CREATED).to_bytes() == ALICE_PHONE.to_bytes()


def test_verify_accepts_the_expected_account_in_any_accepted_spelling() -> None:
    verify(ALICE_PHONE)
    verify(ALICE_PHONE, address=ALICE.address, installation=PHONE.installation_id)
    verify(ALICE_PHONE, address=ALICE.address.lower(), installation=PHONE.installation_id.upper())


@settings(max_examples=40, deadline=None)
@given(account_secrets, installation_seeds, timestamps)
def test_binding_round_trips_through_bytes_and_verifies(secret: bytes, seed: bytes, created_at: int) -> None:
    account = AccountKey.from_bytes(secret)
    installation = InstallationKey.from_bytes(seed)
    binding = bind(account, installation, created_at)
    again = InstallationBinding.from_bytes(binding.to_bytes())
    assert again == binding
    verify(again, address=account.address, installation=installation.installation_id)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_single_byte_change_of_a_serialized_binding_is_refused(data: st.DataObject) -> None:
    encoded = ALICE_PHONE.to_bytes()
    position = data.draw(st.integers(0, len(encoded) - 1), label="position")
    mask = data.draw(st.integers(1, 255), label="mask")
    changed = encoded[:position] + bytes([encoded[position] ^ mask]) + encoded[position + 1 :]
    with pytest.raises(InvalidBinding):
        verify(InstallationBinding.from_bytes(changed))


def test_every_single_bit_flip_of_a_serialized_binding_is_refused() -> None:
    encoded = ALICE_PHONE.to_bytes()
    for position in range(len(encoded)):
        for bit in range(8):
            changed = encoded[:position] + bytes([encoded[position] ^ (1 << bit)]) + encoded[position + 1 :]
            with pytest.raises(InvalidBinding):
                verify(InstallationBinding.from_bytes(changed))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 64), st.integers(1, 255))
def test_any_single_byte_change_of_the_signature_is_refused(position: int, mask: int) -> None:
    signature = bytearray(ALICE_PHONE.signature)
    signature[position] ^= mask
    with pytest.raises(InvalidBinding):
        verify(attrs.evolve(ALICE_PHONE, signature=bytes(signature)))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=MAX_BINDING_BYTES + 20))
def test_from_bytes_raises_nothing_untyped(data: bytes) -> None:
    with contextlib.suppress(InvalidBinding):
        InstallationBinding.from_bytes(data)


@pytest.mark.parametrize(
    ("binding", "expected", "reason"),
    [
        (ALICE_PHONE, {"installation": LAPTOP.installation_id}, "names installation"),
        (ALICE_PHONE, {"address": BOB.address}, "binds account"),
        (attrs.evolve(ALICE_PHONE, signature=ALICE_LAPTOP.signature), {}, "signed by"),
        (attrs.evolve(ALICE_PHONE, signature=BOB_PHONE.signature), {}, "signed by"),
        (attrs.evolve(BOB_PHONE, address=ALICE.address), {"address": ALICE.address}, "signed by"),
        (attrs.evolve(ALICE_PHONE, installation_id=LAPTOP.installation_id), {}, "signed by"),
        (attrs.evolve(ALICE_PHONE, created_at=CREATED + 1), {}, "signed by"),
    ],
    ids=[
        "wrong-installation",
        "wrong-address",
        "signature-of-another-installation",
        "signature-of-another-account",
        "another-account-claims-alice",
        "installation-swapped",
        "created-at-changed",
    ],
)
def test_bindings_that_do_not_hold_are_refused(
    binding: InstallationBinding, expected: dict[str, str], reason: str
) -> None:
    with pytest.raises(InvalidBinding, match=reason):
        verify(binding, **expected)


def test_verify_refuses_an_expected_address_that_is_no_address() -> None:
    with pytest.raises(InvalidAddress):
        verify(ALICE_PHONE, address="alice")


def _fields(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = json.loads(ALICE_PHONE.to_bytes())
    fields.update(changes)
    return fields


def _canonical(fields: dict[str, Any]) -> bytes:
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode("utf-8")


_GOOD = ALICE_PHONE.to_bytes().decode("ascii")
_WITHOUT_ADDRESS = {k: v for k, v in _fields().items() if k != "address"}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not UTF-8 JSON"),
        (b"binding", "not UTF-8 JSON"),
        (b"\xff" + ALICE_PHONE.to_bytes(), "not UTF-8 JSON"),
        (b"[]", "JSON object"),
        (b'"text"', "JSON object"),
        (ALICE_PHONE.to_bytes() + b" " * MAX_BINDING_BYTES, "more than"),
        (json.dumps(_fields(), sort_keys=True, indent=1).encode(), "canonical"),
        (json.dumps(_fields()).encode(), "canonical"),
        (json.dumps(dict(reversed(list(_fields().items()))), separators=(",", ":")).encode(), "canonical"),
        (_GOOD.replace('"0x', '"\\u0030x').encode(), "canonical"),
        (ALICE_PHONE.to_bytes() + b"\n", "canonical"),
        (_canonical(_WITHOUT_ADDRESS), "missing \\['address'\\]"),
        (_canonical(_fields(note="hi")), "extra"),
        (_GOOD.replace("{", '{"created_at":1,', 1).encode(), "twice"),
        (_canonical(_fields(created_at=str(CREATED))), "created_at"),
        (_canonical(_fields(created_at=-1)), "created_at"),
        (_canonical(_fields(created_at=True)), "created_at"),
        (_canonical(_fields(created_at=2**63)), "created_at"),
        (_GOOD.replace(str(CREATED), "1.5").encode(), "fractional"),
        (_GOOD.replace(str(CREATED), "1e9").encode(), "fractional"),
        (_GOOD.replace(str(CREATED), "NaN").encode(), "NaN"),
        (_canonical(_fields(created_at=None)), "created_at"),
        (_canonical(_fields(address=ALICE.address.lower())), "checksummed form"),
        (_canonical(_fields(address=_with_first_letter_recased(ALICE.address))), "checksum"),
        (_canonical(_fields(address=ALICE.address[2:])), "0x"),
        (_canonical(_fields(address=7)), "address must be text"),
        (_canonical(_fields(installation_id=PHONE.installation_id.upper())), "lowercase hex"),
        (_canonical(_fields(installation_id=PHONE.installation_id[:-1])), "lowercase hex"),
        (_canonical(_fields(installation_id=[])), "lowercase hex"),
        (_canonical(_fields(signature=ALICE_PHONE.signature.hex().upper())), "lowercase hex"),
        (_canonical(_fields(signature=ALICE_PHONE.signature.hex()[:128])), "130 lowercase hex"),
        (_canonical(_fields(signature=list(ALICE_PHONE.signature))), "130 lowercase hex"),
    ],
    ids=[
        "empty",
        "not-json",
        "not-utf8",
        "list",
        "string",
        "oversized",
        "indented",
        "spaces",
        "unsorted-keys",
        "escaped-character",
        "trailing-newline",
        "missing-key",
        "extra-key",
        "duplicate-key",
        "created-at-text",
        "created-at-negative",
        "created-at-bool",
        "created-at-too-big",
        "created-at-fraction",
        "created-at-exponent",
        "created-at-nan",
        "created-at-null",
        "address-lowercase",
        "address-bad-checksum",
        "address-without-0x",
        "address-number",
        "installation-uppercase",
        "installation-short",
        "installation-list",
        "signature-uppercase",
        "signature-64-bytes",
        "signature-list",
    ],
)
def test_malformed_serialized_bindings_are_refused(data: bytes, reason: str) -> None:
    with pytest.raises(InvalidBinding, match=reason):
        InstallationBinding.from_bytes(data)


def test_from_bytes_refuses_what_is_not_bytes() -> None:
    with pytest.raises(InvalidBinding, match="expected bytes"):
        InstallationBinding.from_bytes(_GOOD)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "changes",
    [{"created_at": True}, {"created_at": -5}, {"signature": b"\x1b" * 64}, {"installation_id": "ab" * 31}],
    ids=["created-at-bool", "created-at-negative", "signature-64-bytes", "installation-short"],
)
def test_bindings_cannot_be_constructed_with_malformed_fields(changes: dict[str, Any]) -> None:
    with pytest.raises(InvalidBinding):
        attrs.evolve(ALICE_PHONE, **changes)
