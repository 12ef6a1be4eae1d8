"""What a member needs of one epoch to protect and unprotect its messages.

The ratchet tree is not needed whole: only the signature key of each leaf,
handed over as a lookup (``keys.get`` of a mapping does), which answers
``None`` for a blank or unknown leaf.  Everything else comes from the key
schedule: the epoch's GroupContext, its ``membership_key`` and
``sender_data_secret``, and its secret tree.

The view is immutable.  Sending or receiving a PrivateMessage uses up a
ratchet key and returns the view that replaces this one; keep only the
newest, so used keys are gone (RFC 9420 section 9.2).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ..crypto import CipherSuite
from ..errors import InvalidArgument
from ..messages import GroupContext
from ..schedule import EpochSecrets, RatchetWindow, SecretTree
from ..values import replaced

#: ``leaf_index -> signature public key``, ``None`` for a blank leaf or one outside the tree.
SignatureKeys = Callable[[int], bytes | None]


@attrs.frozen
class EpochView:
    """One member's view of one epoch, as message protection uses it.

    Attributes:
        suite: the group's cipher suite.
        group_context: the epoch's GroupContext; its group id and epoch are
            the ones messages must carry, and member signatures cover it.
        own_leaf: this member's leaf index.
        membership_key: keys the membership tags of member PublicMessages.
        sender_data_secret: keys the sender data of PrivateMessages.
        secret_tree: the epoch's secret tree, with what this member used up.
        signature_keys: the signature public key of each leaf.
    """

    suite: CipherSuite
    group_context: GroupContext
    own_leaf: int
    membership_key: bytes = attrs.field(repr=False)
    sender_data_secret: bytes = attrs.field(repr=False)
    secret_tree: SecretTree
    signature_keys: SignatureKeys = attrs.field(repr=False)

    def __attrs_post_init__(self) -> None:
        if self.group_context.cipher_suite != self.suite.id:
            raise InvalidArgument(
                f"the group context is for cipher suite {self.group_context.cipher_suite}, not {self.suite.id}"
            )
        if self.secret_tree.suite != self.suite:
            raise InvalidArgument(
                f"the secret tree is for cipher suite {self.secret_tree.suite.id}, not {self.suite.id}"
            )
        if type(self.own_leaf) is not int or not 0 <= self.own_leaf < self.secret_tree.n_leaves:
            raise InvalidArgument(f"own leaf {self.own_leaf!r} is outside a tree of {self.secret_tree.n_leaves} leaves")

    @classmethod
    def create(
        cls,
        secrets: EpochSecrets,
        group_context: GroupContext,
        n_leaves: int,
        own_leaf: int,
        signature_keys: SignatureKeys,
        window: RatchetWindow | None = None,
    ) -> EpochView:
        """The view of an epoch just entered: its key schedule output and a fresh secret tree of ``n_leaves``."""
        tree = SecretTree.create(secrets.suite, secrets.encryption_secret, n_leaves, window)
        return cls(
            secrets.suite,
            group_context,
            own_leaf,
            secrets.membership_key,
            secrets.sender_data_secret,
            tree,
            signature_keys,
        )

    @property
    def group_id(self) -> bytes:
        """The group every message of this view belongs to."""
        return self.group_context.group_id

    @property
    def epoch(self) -> int:
        """The epoch every message of this view belongs to."""
        return self.group_context.epoch

    def with_secret_tree(self, tree: SecretTree) -> EpochView:
        """The same view after ``tree`` replaced the secret tree (a key was used up)."""
        # Identity first: the tree is almost always the same suite object (attrs equality compares every field).
        if (tree.suite is not self.suite and tree.suite != self.suite) or tree.n_leaves != self.secret_tree.n_leaves:
            raise InvalidArgument("the secret tree is for another suite or tree size than the view's")
        return replaced(self, secret_tree=tree)
