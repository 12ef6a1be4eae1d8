"""Joining a group from a Welcome (RFC 9420 section 12.4.3.1).

The joiner opens its GroupSecrets with the KeyPackage's init key, the
GroupInfo with the welcome secret, checks the ratchet tree whole (section
7.9 and 12.4.3.1: its hash, every leaf, parent hashes, unmerged leaves),
the GroupInfo's signature, finds its own leaf, takes the path secret the
committer left it, and checks the confirmation tag against the key
schedule it computed: a Welcome that passes all this puts the joiner in the
same epoch as every member.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..codec import decode
from ..crypto import KeyPair, suite
from ..errors import InvalidMessage
from ..messages import GroupInfo, KeyPackage, MLSMessage, RatchetTree, Welcome
from ..schedule import epoch_secrets, verify_confirmation_tag
from ..tree import math as tree_math
from ..tree.private_tree import TreePrivate
from ..tree.ratchet_tree import RatchetTree as Tree
from ..tree.validation import validate_tree
from . import extensions as ext
from .epoch import EpochStart, first_state, psk_secret_for
from .group_info import ratchet_tree_extension, verify_group_info
from .key_packages import KeyPackageSecrets, key_package_ref
from .refusals import NoRatchetTree
from .state import GroupConfig, GroupState
from .welcome import open_group_info, open_group_secrets


def decode_welcome(data: bytes) -> Welcome:
    """The Welcome an encoded MLSMessage carries (:class:`InvalidMessage` for any other kind)."""
    message = decode(MLSMessage, data)
    if not isinstance(message.message, Welcome):
        raise InvalidMessage(f"expected a Welcome, got a {message.wire_format.name.lower()}")
    return message.message


def received_tree(group_info: GroupInfo, ratchet_tree: RatchetTree | None) -> Tree:
    """The ratchet tree a joiner uses: the GroupInfo's extension, else the one passed out of band."""
    cs = suite(group_info.group_context.cipher_suite)
    carried = ratchet_tree_extension(group_info)
    message = carried if carried is not None else ratchet_tree
    if message is None:
        raise NoRatchetTree("the GroupInfo carries no ratchet_tree extension: pass the group's ratchet tree")
    return Tree.from_message(cs, message)


def checked_tree(group_info: GroupInfo, tree: Tree) -> None:
    """Validate a received tree against the GroupInfo, then the GroupInfo's signature with its signer's key."""
    context = group_info.group_context
    validate_tree(
        tree,
        context.group_id,
        tree_hash=context.tree_hash,
        required=ext.required_capabilities(context.extensions),
    )
    ext.check_group_extensions(context.extensions, tree.members())
    if group_info.signer >= tree.n_leaves or tree.leaf(group_info.signer) is None:
        raise InvalidMessage(f"the GroupInfo's signer, leaf {group_info.signer}, is not a member")
    verify_group_info(tree.suite, group_info, tree.member(group_info.signer).signature_key)


def join_from_welcome(
    welcome: bytes | Welcome,
    key_package: KeyPackage,
    secrets: KeyPackageSecrets,
    *,
    ratchet_tree: RatchetTree | None = None,
    external_psks: Mapping[bytes, bytes] | None = None,
    resumption_psks: Mapping[tuple[bytes, int], bytes] | None = None,
    config: GroupConfig | None = None,
) -> GroupState:
    """Our state in the group ``welcome`` brings us into, as the owner of ``key_package``.

    ``ratchet_tree`` is needed only when the Welcome's GroupInfo carries no
    ``ratchet_tree`` extension.  PSKs the Welcome names are looked up in
    ``external_psks`` (by PSK id) and ``resumption_psks`` (by group id and
    epoch).
    """
    sealed = decode_welcome(welcome) if isinstance(welcome, bytes) else welcome
    cs = suite(key_package.cipher_suite)
    if sealed.cipher_suite != cs.id:
        raise InvalidMessage(f"the Welcome is for cipher suite {sealed.cipher_suite}, the KeyPackage for {cs.id}")
    group_secrets = open_group_secrets(cs, sealed, key_package_ref(cs, key_package), secrets.init_private)
    external = dict(external_psks or {})
    psk_secret = psk_secret_for(cs, b"", group_secrets.psks, external, dict(resumption_psks or {}))
    group_info = open_group_info(cs, sealed, group_secrets.joiner_secret, psk_secret)
    context = group_info.group_context
    if context.cipher_suite != cs.id or context.version != key_package.version:
        raise InvalidMessage("the GroupInfo's cipher suite or version is not the KeyPackage's")
    tree = received_tree(group_info, ratchet_tree)
    checked_tree(group_info, tree)
    own_leaf = _own_leaf(tree, key_package)
    leaf_key = KeyPair(secrets.encryption_private, key_package.leaf_node.encryption_key)
    private = TreePrivate.for_leaf(own_leaf, leaf_key)
    if group_secrets.path_secret is not None:
        ancestor = tree_math.common_ancestor(2 * own_leaf, 2 * group_info.signer, tree.n_leaves)
        private = TreePrivate.join(tree, own_leaf, leaf_key, ancestor, group_secrets.path_secret.path_secret)
    epoch = epoch_secrets(cs, group_secrets.joiner_secret, psk_secret, context)
    verify_confirmation_tag(cs, epoch.confirmation_key, context.confirmed_transcript_hash, group_info.confirmation_tag)
    start = EpochStart(context, tree, private, epoch, group_info.confirmation_tag)
    return first_state(start, secrets.signature_private, config or GroupConfig(), external_psks=external)


def _own_leaf(tree: Tree, key_package: KeyPackage) -> int:
    """The leaf holding exactly our KeyPackage's leaf node (RFC 9420 section 12.4.3.1)."""
    for index, leaf in tree.members():
        if leaf == key_package.leaf_node:
            return index
    raise InvalidMessage("the Welcome's ratchet tree has no leaf with our KeyPackage's leaf node")
