"""Our side of the interop tests: reading what a peer sends with Tessera's MLS codec, crypto and key schedule.

Each helper is one step a receiving member takes (RFC 9420 sections 6, 7.2,
10, 12.4.3), written against the committed library pieces only, so a test
can check a peer's message field by field without a group state machine.
"""

from __future__ import annotations

from typing import TypeVar

import attrs

from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.crypto import CipherSuite
from protocols.libraries.mls.crypto.labels import decrypt_with_label, make_key_package_ref, verify_with_label
from protocols.libraries.mls.messages import (
    AuthenticatedContentTBM,
    ContentType,
    Extension,
    ExtensionType,
    FramedContent,
    FramedContentTBS,
    GroupContext,
    GroupInfo,
    GroupInfoTBS,
    GroupSecrets,
    KeyPackage,
    KeyPackageTBS,
    LeafNode,
    LeafNodePayload,
    LeafNodeTBS,
    MLSMessage,
    PrivateContentAAD,
    PrivateMessage,
    PrivateMessageContent,
    ProtocolVersion,
    PublicMessage,
    RatchetTree,
    SenderData,
    SenderDataAAD,
    SenderMember,
    Welcome,
    WireFormat,
)
from protocols.libraries.mls.schedule import (
    EpochSecrets,
    RatchetKind,
    SecretTree,
    epoch_secrets,
    sender_data_key_nonce,
    welcome_key_nonce,
    welcome_secret,
    zero_secret,
)

M = TypeVar("M", PublicMessage, PrivateMessage, Welcome, GroupInfo, KeyPackage)


def read_message(hex_text: str, kind: type[M]) -> M:
    """The ``kind`` inside an MLSMessage, checked to re-encode to exactly the bytes received."""
    data = bytes.fromhex(hex_text)
    framed = decode(MLSMessage, data)
    assert encode(framed) == data, "re-encoding changed the message"
    assert framed.version == ProtocolVersion.MLS10
    assert isinstance(framed.message, kind), f"expected a {kind.__name__}, got {framed.wire_format.name}"
    return framed.message


# --- signatures ------------------------------------------------------------------------------


def leaf_tbs(leaf: LeafNode, group_id: bytes | None = None, leaf_index: int | None = None) -> bytes:
    """LeafNodeTBS of ``leaf``: group and position only for update and commit leaves (RFC 9420 section 7.2)."""
    payload = {field.name: getattr(leaf, field.name) for field in attrs.fields(LeafNodePayload)}
    return encode(LeafNodeTBS(**payload, group_id=group_id, leaf_index=leaf_index))


def leaf_signature_verifies(
    cs: CipherSuite, leaf: LeafNode, group_id: bytes | None = None, leaf_index: int | None = None
) -> bool:
    """VerifyWithLabel(leaf.signature_key, "LeafNodeTBS", LeafNodeTBS, leaf.signature)."""
    return verify_with_label(
        cs, leaf.signature_key, "LeafNodeTBS", leaf_tbs(leaf, group_id, leaf_index), leaf.signature
    )


def key_package_signature_verifies(cs: CipherSuite, key_package: KeyPackage) -> bool:
    """The KeyPackage signature, by the key of its own leaf (RFC 9420 section 10)."""
    tbs = encode(key_package, KeyPackageTBS)
    return verify_with_label(cs, key_package.leaf_node.signature_key, "KeyPackageTBS", tbs, key_package.signature)


def group_info_signature_verifies(cs: CipherSuite, group_info: GroupInfo) -> bool:
    """The GroupInfo signature, by the signer's leaf in the GroupInfo's own ratchet tree."""
    signer = leaf_at(ratchet_tree_of(group_info), group_info.signer)
    tbs = encode(group_info, GroupInfoTBS)
    return verify_with_label(cs, signer.signature_key, "GroupInfoTBS", tbs, group_info.signature)


def framed_content_tbs(wire_format: WireFormat, content: FramedContent, context: GroupContext) -> FramedContentTBS:
    """What a member's content is signed as: with the GroupContext of the epoch it was sent in (section 6.1)."""
    return FramedContentTBS(ProtocolVersion.MLS10, wire_format, content, context)


def content_signature_verifies(cs: CipherSuite, tbs: FramedContentTBS, signature: bytes, signature_key: bytes) -> bool:
    """VerifyWithLabel(signature_key, "FramedContentTBS", tbs, signature)."""
    return verify_with_label(cs, signature_key, "FramedContentTBS", encode(tbs), signature)


def membership_tag_verifies(
    cs: CipherSuite, message: PublicMessage, tbs: FramedContentTBS, membership_key: bytes
) -> bool:
    """A member's PublicMessage carries MAC(membership_key, AuthenticatedContentTBM) (section 6.2)."""
    assert message.membership_tag is not None, "a member's PublicMessage has a membership tag"
    tbm = encode(AuthenticatedContentTBM(tbs, message.auth))
    return cs.verify_mac(membership_key, tbm, message.membership_tag)


# --- the ratchet tree --------------------------------------------------------------------------


def extension(extensions: tuple[Extension, ...], kind: ExtensionType) -> bytes:
    """The data of the one extension of type ``kind``."""
    (data,) = [found.extension_data for found in extensions if found.extension_type == kind]
    return data


def ratchet_tree_of(group_info: GroupInfo) -> RatchetTree:
    """The tree a GroupInfo carries in its ``ratchet_tree`` extension, checked to re-encode (section 12.4.3.3)."""
    data = extension(group_info.extensions, ExtensionType.RATCHET_TREE)
    tree = decode(RatchetTree, data)
    assert encode(tree) == data, "re-encoding changed the ratchet tree"
    return tree


def leaf_at(tree: RatchetTree, leaf_index: int) -> LeafNode:
    """The member at ``leaf_index``: leaves are the even nodes of the array."""
    node = tree.nodes[2 * leaf_index]
    assert isinstance(node, LeafNode), f"leaf {leaf_index} is blank"
    return node


def leaf_count(tree: RatchetTree) -> int:
    """Leaves of the full tree: the sent array drops trailing blanks, the tree has a power of two (section 12.4.3.3)."""
    sent = (len(tree.nodes) + 1) // 2
    return 1 << (sent - 1).bit_length()


# --- joining and receiving -------------------------------------------------------------------------


@attrs.frozen
class Joined:
    """What a new member learns from a Welcome: the group's GroupInfo and the epoch's secrets."""

    group_info: GroupInfo
    secrets: EpochSecrets = attrs.field(repr=False)


def join(cs: CipherSuite, welcome: Welcome, key_package: KeyPackage, init_private_key: bytes) -> Joined:
    """Open a Welcome as the owner of ``key_package``, with no PSKs (RFC 9420 section 12.4.3.1).

    Finds the entry for our KeyPackageRef, decrypts GroupSecrets with the init
    key, opens the GroupInfo with the welcome key and nonce, and runs the key
    schedule from the joiner secret.  Checks the GroupInfo re-encodes byte
    for byte; signature and confirmation tag are for the caller to check.
    """
    ref = make_key_package_ref(cs, encode(key_package))
    (mine,) = [entry for entry in welcome.secrets if entry.new_member == ref]
    sealed = mine.encrypted_group_secrets
    secrets_data = decrypt_with_label(
        cs, init_private_key, "Welcome", welcome.encrypted_group_info, sealed.kem_output, sealed.ciphertext
    )
    group_secrets = decode(GroupSecrets, secrets_data)
    assert encode(group_secrets) == secrets_data and group_secrets.psks == ()
    psk = zero_secret(cs)
    key, nonce = welcome_key_nonce(cs, welcome_secret(cs, group_secrets.joiner_secret, psk))
    info_data = cs.open(key, nonce, b"", welcome.encrypted_group_info)
    group_info = decode(GroupInfo, info_data)
    assert encode(group_info) == info_data
    return Joined(group_info, epoch_secrets(cs, group_secrets.joiner_secret, psk, group_info.group_context))


@attrs.frozen
class Opened:
    """A PrivateMessage decrypted: who sent it, what it framed, and the plaintext exactly as sent."""

    sender_data: SenderData
    content: FramedContent
    private_content: PrivateMessageContent
    plaintext: bytes = attrs.field(repr=False)


def open_private(cs: CipherSuite, message: PrivateMessage, secrets: EpochSecrets, n_leaves: int) -> Opened:
    """Decrypt a PrivateMessage with the epoch's sender-data secret and secret tree (RFC 9420 section 6.3)."""
    key, nonce = sender_data_key_nonce(cs, secrets.sender_data_secret, message.ciphertext)
    sender_aad = encode(SenderDataAAD(message.group_id, message.epoch, message.content_type))
    sender_data = decode(SenderData, cs.open(key, nonce, sender_aad, message.encrypted_sender_data))
    kind = RatchetKind.APPLICATION if message.content_type == ContentType.APPLICATION else RatchetKind.HANDSHAKE
    tree = SecretTree.create(cs, secrets.encryption_secret, n_leaves)
    _, ratchet_key = tree.receive_key(sender_data.leaf_index, kind, sender_data.generation)
    # The reuse guard is XORed into the first four bytes of the ratchet's nonce (section 6.3.2).
    guarded = bytes(a ^ b for a, b in zip(ratchet_key.nonce[:4], sender_data.reuse_guard, strict=True))
    content_aad = encode(
        PrivateContentAAD(message.group_id, message.epoch, message.content_type, message.authenticated_data)
    )
    plaintext = cs.open(ratchet_key.key, guarded + ratchet_key.nonce[4:], content_aad, message.ciphertext)
    private_content = decode(PrivateMessageContent, plaintext, content_type=message.content_type)
    sender = SenderMember(sender_data.leaf_index)
    content = FramedContent(
        message.group_id, message.epoch, sender, message.authenticated_data, private_content.content
    )
    return Opened(sender_data, content, private_content, plaintext)
