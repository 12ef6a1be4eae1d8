"""Key packages: what real clients upload passes and says who it is; forged, stale or broken ones are refused."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.group.key_packages import create_key_package
from protocols.libraries.mls.messages import BasicCredential, Credential, KeyPackage, Lifetime, MLSMessage
from protocols.libraries.mls.messages.credentials import X509Credential
from protocols.libraries.mls.messages.registries import ProtocolVersion
from protocols.libraries.xmtp_identity import CheckedKeyPackage, Refused, check_key_package
from protocols.libraries.xmtp_identity.key_packages import MAX_CLOCK_SKEW_SECONDS, MAX_KEY_PACKAGE_BYTES
from protocols.libraries.xmtp_wire.proto import associations_pb2, mls_credential_pb2
from tests.xmtp_identity.capture import Captured

NOW = 1_800_000_000
INBOX_ID = "ab" * 32
XMTP_SUITE = 3  # MLS_128_DHKEMX25519_CHACHA20POLY1305_SHA256_Ed25519, what libxmtp v1.10.0 uses


def xmtp_credential(inbox_id: str = INBOX_ID) -> BasicCredential:
    return BasicCredential(mls_credential_pb2.MlsCredential(inbox_id=inbox_id).SerializeToString())


def forged(credential: Credential | None = None, lifetime: Lifetime | None = None) -> bytes:
    """A correctly signed KeyPackage made by the project's own engine, as an XMTP installation would."""
    cs = suite(XMTP_SUITE)
    key_package, _ = create_key_package(
        cs,
        credential or xmtp_credential(),
        cs.generate_signature_key_pair(),
        lifetime=lifetime or Lifetime(NOW - 3600, NOW + 90 * 86400),
        last_resort=True,
    )
    return encode(key_package)


def refused(data: bytes, now: int = NOW) -> Refused:
    with pytest.raises(Refused) as caught:
        check_key_package(data, now=now)
    return caught.value


def test_a_real_clients_key_package_names_its_installation_and_inbox(captured: Captured) -> None:
    for data in captured.key_packages:
        checked = check_key_package(data, now=captured.captured_at)
        parsed = decode(KeyPackage, data)
        assert checked == CheckedKeyPackage(
            installation_key=bytes(parsed.leaf_node.signature_key),
            inbox_id=checked.inbox_id,
            cipher_suite=XMTP_SUITE,
            not_before=checked.not_before,
            not_after=checked.not_after,
            init_key=bytes(parsed.init_key),
            raw=data,
        )
        assert checked.inbox_id in {inbox for inbox, _ in captured.identity_updates}
        # every installation that uploads a key package was added to its inbox by an identity update
        assert checked.installation_key.hex() in _every_added_installation(captured)


def _every_added_installation(captured: Captured) -> set[str]:
    added = set()
    for _, data in captured.identity_updates:
        for action in associations_pb2.IdentityUpdate.FromString(data).actions:
            if action.WhichOneof("kind") == "add":
                added.add(action.add.new_member_identifier.installation_public_key.hex())
    return added


def test_a_key_package_in_an_mls_message_is_read_too() -> None:
    data = forged()
    framed = encode(MLSMessage(ProtocolVersion.MLS10, decode(KeyPackage, data)))
    assert check_key_package(framed, now=NOW).raw == framed
    assert check_key_package(framed, now=NOW).inbox_id == INBOX_ID


def test_a_key_package_with_a_bad_signature_is_refused(captured: Captured) -> None:
    data = bytearray(captured.key_packages[0])
    data[-1] ^= 0x01  # the last byte is the KeyPackage's own signature
    assert refused(bytes(data), captured.captured_at).reason == "bad_signature"


def test_a_key_package_signed_by_another_key_than_its_leaf_is_refused() -> None:
    mine, theirs = decode(KeyPackage, forged()), decode(KeyPackage, forged())
    swapped = attrs.evolve(mine, signature=theirs.signature)
    assert refused(encode(swapped)).reason == "bad_signature"


def test_credentials_that_are_not_an_xmtp_inbox_are_refused() -> None:
    assert refused(forged(X509Credential(()))).reason == "bad_credential"
    assert refused(forged(BasicCredential(b"\xff\xff not protobuf"))).reason == "bad_credential"
    assert refused(forged(BasicCredential(b""))).reason == "bad_credential"  # an empty MlsCredential: no inbox id
    assert refused(forged(xmtp_credential("not-an-inbox"))).reason == "bad_credential"


def test_lifetimes_must_cover_now_and_be_sane() -> None:
    assert refused(forged(lifetime=Lifetime(NOW - 100 * 86400, NOW - 1))).reason == "expired"
    assert refused(forged(lifetime=Lifetime(NOW + 2 * MAX_CLOCK_SKEW_SECONDS, NOW + 86400))).reason == "not_yet_valid"
    assert refused(forged(lifetime=Lifetime(NOW - 3600, NOW + 10 * 365 * 86400))).reason == "lifetime_too_long"
    assert check_key_package(forged(lifetime=Lifetime(NOW + 60, NOW + 86400)), now=NOW).not_before == NOW + 60


def test_a_real_key_package_is_refused_once_expired_or_before_it_starts(captured: Captured) -> None:
    checked = check_key_package(captured.key_packages[0], now=captured.captured_at)
    assert refused(captured.key_packages[0], checked.not_after + 1).reason == "expired"
    assert refused(captured.key_packages[0], checked.not_before - MAX_CLOCK_SKEW_SECONDS - 1).reason == "not_yet_valid"


def test_garbage_and_other_mls_messages_are_refused() -> None:
    for garbage in (b"", b"\x00", b"\x00\x01\x00\x05" + b"x" * 40, bytes(range(256))):
        assert refused(garbage).reason in {"not_mls", "not_key_package"}
    oversized = forged() + b"\x00" * MAX_KEY_PACKAGE_BYTES
    error = refused(oversized)
    assert (error.reason, error.status) == ("too_large", "RESOURCE_EXHAUSTED")


def test_an_unknown_cipher_suite_is_refused() -> None:
    parsed = decode(KeyPackage, forged())
    assert refused(encode(attrs.evolve(parsed, cipher_suite=0x7777))).reason in {"invalid_key_package", "bad_signature"}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_single_bit_flip_of_a_real_key_package_is_refused(captured: Captured, data: st.DataObject) -> None:
    """Every byte of a KeyPackage is signed or is a signature, so no flip of any bit may pass."""
    original = data.draw(st.sampled_from(captured.key_packages))
    bit = data.draw(st.integers(0, len(original) * 8 - 1))
    flipped = bytearray(original)
    flipped[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(Refused):
        check_key_package(bytes(flipped), now=captured.captured_at)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_are_refused_not_crashed_on(data: bytes) -> None:
    with pytest.raises(Refused):
        check_key_package(data, now=NOW)
