"""Hostile input: every single-byte change of a protected message, replays, and hand-forged PrivateMessages.

Every refusal must be a typed library error (an :class:`MlsError`), never
another exception, must name no secret, and must leave the receiver's view
able to read the genuine message afterwards.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from protocols.libraries.mls.codec import DecodeError, decode, encode
from protocols.libraries.mls.errors import (
    CannotDecryptOwnMessage,
    DecryptionFailed,
    InvalidSignature,
    MlsError,
    WrongEpoch,
)
from protocols.libraries.mls.messages import ApplicationData, MLSMessage
from protocols.libraries.mls.messages.registries import ProtocolVersion, WireFormat
from protocols.libraries.mls.protection import (
    ContentNotAllowed,
    EpochView,
    MembershipTagMismatch,
    NotFramedContent,
    UnknownSender,
    WrongGroup,
    protect_private,
    sign_own_content,
    unprotect,
)
from protocols.libraries.mls.schedule import GenerationExpired, GenerationReused, GenerationTooFarAhead, RatchetWindow
from tests.mls.protection._cases import CASES, KINDS, RECEIVER, SENDER, Group
from tests.mls.protection._forge import plaintext_of, seal

#: What a changed byte may legitimately cause; anything else is a bug even when it is an MlsError.
EXPECTED_REFUSALS = (
    DecodeError,
    WrongGroup,
    WrongEpoch,
    DecryptionFailed,
    MembershipTagMismatch,
    InvalidSignature,
    UnknownSender,
    ContentNotAllowed,
    CannotDecryptOwnMessage,
    NotFramedContent,
)
MASKS = (0x01, 0xFF)


def _secrets(group: Group) -> list[str]:
    v = group.vector
    names = ("membership_key", "sender_data_secret", "encryption_secret", "signature_priv")
    return [v[name] for name in names]


def _own_private_message(group: Group) -> bytes:
    """A padded application message of our own, so the flips also reach padding bytes."""
    authenticated = sign_own_content(
        group.sender(), group.signature_private, WireFormat.MLS_PRIVATE_MESSAGE, ApplicationData(b"flip me")
    )
    _, message = protect_private(group.sender(), authenticated, padding=16)
    return encode(MLSMessage(ProtocolVersion.MLS10, message))


def _refusal(view: EpochView, data: bytes) -> MlsError | None:
    """The error unprotecting ``data`` raises, or None when it is accepted."""
    try:
        unprotect(view, decode(MLSMessage, data))
    except MlsError as refused:
        return refused
    return None


@CASES
def test_every_changed_byte_is_refused_with_a_typed_error(vector: dict[str, Any]) -> None:
    group = Group(vector)
    view = group.receiver()
    messages = [group.message_bytes(f"{kind}_priv") for kind in KINDS]
    messages += [group.message_bytes(f"{kind}_pub") for kind in ("proposal", "commit")]
    messages.append(_own_private_message(group))
    secrets = _secrets(group)
    for original in messages:
        for position in range(len(original)):
            for mask in MASKS:
                changed = bytearray(original)
                changed[position] ^= mask
                refused = _refusal(view, bytes(changed))
                assert refused is not None, f"byte {position} ^ {mask:#x} was accepted"
                assert isinstance(refused, EXPECTED_REFUSALS), f"byte {position}: {type(refused).__name__}: {refused}"
                assert not any(secret in str(refused) for secret in secrets)
        assert _refusal(view, original) is None  # the refusals used up nothing


@CASES
@pytest.mark.parametrize("kind", KINDS)
def test_a_replayed_private_message_is_refused(vector: dict[str, Any], kind: str) -> None:
    group = Group(vector)
    message = group.message(f"{kind}_priv")
    view, _ = unprotect(group.receiver(), message)
    with pytest.raises(GenerationReused):
        unprotect(view, message)


@CASES
def test_a_non_zero_padding_byte_is_refused(vector: dict[str, Any]) -> None:
    group = Group(vector)
    authenticated = sign_own_content(
        group.sender(), group.signature_private, WireFormat.MLS_PRIVATE_MESSAGE, ApplicationData(b"padded")
    )
    plaintext = bytearray(plaintext_of(authenticated, padding=8))
    plaintext[-3] = 1
    _, message = seal(group.sender(), authenticated, bytes(plaintext))
    with pytest.raises(DecodeError) as refused:
        unprotect(group.receiver(), MLSMessage(ProtocolVersion.MLS10, message))
    assert refused.value.path.endswith(".padding")
    _, zero_padded = seal(group.sender(), authenticated, plaintext_of(authenticated, padding=8))
    _, accepted = unprotect(group.receiver(), MLSMessage(ProtocolVersion.MLS10, zero_padded))
    assert accepted.content.content == ApplicationData(b"padded")


@CASES
def test_sender_data_naming_another_leaf_is_refused(vector: dict[str, Any]) -> None:
    group = Group(vector)
    authenticated = sign_own_content(
        group.sender(), group.signature_private, WireFormat.MLS_PRIVATE_MESSAGE, ApplicationData(b"who?")
    )
    plaintext = plaintext_of(authenticated)
    for leaf, refusal in ((RECEIVER, CannotDecryptOwnMessage), (7, UnknownSender)):
        _, message = seal(group.sender(), authenticated, plaintext, leaf=leaf)
        with pytest.raises(refusal):
            unprotect(group.receiver(), MLSMessage(ProtocolVersion.MLS10, message))


@CASES
def test_a_message_from_our_own_leaf_is_refused(vector: dict[str, Any]) -> None:
    group = Group(vector)
    for kind in KINDS:
        with pytest.raises(CannotDecryptOwnMessage):
            unprotect(group.sender(), group.message(f"{kind}_priv"))


@CASES
def test_a_blank_sender_leaf_is_refused(vector: dict[str, Any]) -> None:
    group = Group(vector)
    view = group.view(RECEIVER, keys={})
    for name in ("proposal_pub", "commit_pub", "application_priv"):
        with pytest.raises(UnknownSender) as refused:
            unprotect(view, group.message(name))
        assert refused.value.leaf == SENDER


@CASES
def test_a_signature_by_another_key_is_refused_and_burns_no_key(vector: dict[str, Any]) -> None:
    group = Group(vector)
    impostor = group.suite.generate_signature_key_pair()
    view = group.view(RECEIVER, keys={SENDER: impostor.public})
    for kind in KINDS:
        with pytest.raises(InvalidSignature):
            unprotect(view, group.message(f"{kind}_priv"))
    corrected = attrs.evolve(view, signature_keys={SENDER: group.signature_public}.get)
    for kind in KINDS:  # the refused generations are still there once the right key is known
        unprotect(corrected, group.message(f"{kind}_priv"))


@CASES
def test_generations_outside_the_window_are_refused(vector: dict[str, Any]) -> None:
    group = Group(vector)
    window = RatchetWindow(out_of_order_tolerance=1, maximum_forward_distance=2)
    sender, messages = group.sender(window), []
    for index in range(5):
        authenticated = sign_own_content(
            sender, group.signature_private, WireFormat.MLS_PRIVATE_MESSAGE, ApplicationData(bytes([index]))
        )
        sender, message = protect_private(sender, authenticated)
        messages.append(MLSMessage(ProtocolVersion.MLS10, message))
    receiver = group.receiver(window)
    with pytest.raises(GenerationTooFarAhead):
        unprotect(receiver, messages[3])
    receiver, _ = unprotect(receiver, messages[2])
    receiver, _ = unprotect(receiver, messages[1])
    with pytest.raises(GenerationExpired):
        unprotect(receiver, messages[0])
