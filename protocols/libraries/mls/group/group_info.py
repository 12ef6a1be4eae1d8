"""GroupInfo (RFC 9420 §12.4.3): signing and verifying it, and reading the extensions a joiner needs.

A GroupInfo tells a joiner the group's context, extensions and confirmation
tag, signed by the member at leaf ``signer``.  It travels encrypted in a
Welcome, or published for external joins with ``external_pub`` (§12.4.3.2)
and, optionally, the tree in ``ratchet_tree`` (§12.4.3.3).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..codec import encode
from ..crypto import CipherSuite
from ..crypto.labels import sign_with_label, verify_with_label
from ..errors import InvalidMessage, InvalidSignature
from ..messages import Extension, ExtensionType, ExternalPub, GroupContext, GroupInfo, GroupInfoTBS, RatchetTree
from ..schedule import encode_group_context
from .extensions import check_unique, decoded

GROUP_INFO_LABEL = "GroupInfoTBS"


def sign_group_info(
    cs: CipherSuite,
    group_context: GroupContext,
    extensions: Sequence[Extension],
    confirmation_tag: bytes,
    signer: int,
    signature_private: bytes,
) -> GroupInfo:
    """The GroupInfo of ``group_context`` signed by leaf ``signer``: ``SignWithLabel(., "GroupInfoTBS", ...)``.

    Raises :class:`~protocols.libraries.mls.errors.InvalidArgument` when ``group_context``
    is for another cipher suite than ``cs``.
    """
    encode_group_context(cs, group_context)
    tbs = GroupInfoTBS(group_context, tuple(extensions), confirmation_tag, signer)
    signature = sign_with_label(cs, signature_private, GROUP_INFO_LABEL, encode(tbs))
    return GroupInfo(group_context, tbs.extensions, confirmation_tag, signer, signature)


def verify_group_info(cs: CipherSuite, group_info: GroupInfo, signer_public: bytes) -> None:
    """Check ``group_info``'s signature under ``signer_public``, the signature key of leaf ``group_info.signer``.

    Raises :class:`InvalidMessage` for a GroupInfo of another cipher suite and
    :class:`InvalidSignature` when the signature does not verify.
    """
    if group_info.group_context.cipher_suite != cs.id:
        raise InvalidMessage(f"the GroupInfo is for cipher suite {group_info.group_context.cipher_suite}, not {cs.id}")
    tbs = encode(group_info, GroupInfoTBS)
    if not verify_with_label(cs, signer_public, GROUP_INFO_LABEL, tbs, group_info.signature):
        raise InvalidSignature(f"the GroupInfo signature does not verify under the key of leaf {group_info.signer}")


def external_pub(group_info: GroupInfo) -> bytes | None:
    """The HPKE public key of the ``external_pub`` extension, for external commits; None without one.

    A GroupInfo naming an extension type twice raises
    :class:`~.refusals.UnsupportedExtension` (an :class:`InvalidMessage`).
    """
    check_unique(group_info.extensions, "the GroupInfo")
    found = decoded(group_info.extensions, ExtensionType.EXTERNAL_PUB, ExternalPub)
    return None if found is None else found.external_pub


def ratchet_tree_extension(group_info: GroupInfo) -> RatchetTree | None:
    """The tree of the ``ratchet_tree`` extension (not yet validated); None when the joiner must get it elsewhere.

    Refuses repeated extension types as :func:`external_pub` does.
    """
    check_unique(group_info.extensions, "the GroupInfo")
    return decoded(group_info.extensions, ExtensionType.RATCHET_TREE, RatchetTree)
