"""Values that cannot be encoded are refused with an EncodeError naming the field."""

from __future__ import annotations

import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import EncodeError, encode
from protocols.libraries.mls.errors import InvalidArgument

CONTENT = m.FramedContent(b"group", 1, m.SenderExternal(0), b"", m.ApplicationData(b"hi"))
AUTH = m.FramedContentAuthData(b"signature", None)


@pytest.mark.parametrize(
    "value, path, reason",
    [
        (m.Remove(1 << 32), "Remove.removed", "does not fit uint32"),
        (m.Remove(-1), "Remove.removed", "does not fit uint32"),
        (m.Remove("1"), "Remove.removed", "must be an int"),  # type: ignore[arg-type]
        (m.ExternalInit("kem"), "ExternalInit.kem_output", "must be bytes"),  # type: ignore[arg-type]
        (m.SenderData(1, 2, b"abc"), "SenderData.reuse_guard", "must be 4 bytes"),
        (m.PrivateMessage(b"", 0, 7, b"", b"", b""), "PrivateMessage.content_type", "not a defined ContentType"),  # type: ignore[arg-type]
        (m.Commit((m.Remove(1),), None), "Commit.proposals[0]", "Remove is not a case of ProposalOrRef"),  # type: ignore[arg-type]
        (m.PublicMessage(CONTENT, AUTH, b"tag"), "PublicMessage.membership_tag", "must be None"),
        (
            m.PublicMessage(m.FramedContent(b"g", 1, m.SenderMember(0), b"", m.ApplicationData(b"")), AUTH, None),
            "PublicMessage.membership_tag",
            "must be present",
        ),
        (
            m.PublicMessage(CONTENT, m.FramedContentAuthData(b"", b"tag"), None),
            "PublicMessage.auth.confirmation_tag",
            "must be None",
        ),
    ],
)
def test_refused_with_field_path(value, path, reason):
    with pytest.raises(EncodeError, match=reason) as refused:
        encode(value)
    assert refused.value.path == path
    assert isinstance(refused.value, InvalidArgument)


def test_struct_of_the_wrong_class_is_refused():
    with pytest.raises(EncodeError, match="expected KeyPackage, got Remove"):
        encode(m.Remove(1), m.KeyPackage)


def test_oversized_length_is_refused():
    with pytest.raises(EncodeError, match="exceeds the largest MLS variable-length integer"):
        encode(m.ExternalInit(bytes(1 << 30)))
