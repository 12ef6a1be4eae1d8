"""Checks every received framed message goes through, whatever its wire format (RFC 9420 sections 6 and 6.3.2)."""

from __future__ import annotations

from ..errors import WrongEpoch
from ..messages import ContentType, Sender, SenderExternal, SenderMember, SenderType
from .errors import ContentNotAllowed, UnknownSender, WrongGroup
from .view import EpochView

#: What each non-member sender type may send (section 6): external senders and
#: new members propose, a new member joining by external commit commits.
_NON_MEMBER_CONTENT = {
    SenderType.EXTERNAL: ContentType.PROPOSAL,
    SenderType.NEW_MEMBER_PROPOSAL: ContentType.PROPOSAL,
    SenderType.NEW_MEMBER_COMMIT: ContentType.COMMIT,
}


def check_group_and_epoch(view: EpochView, group_id: bytes, epoch: int) -> None:
    """Refuse a message of another group (:class:`WrongGroup`) or another epoch (:class:`WrongEpoch`)."""
    if group_id != view.group_id:
        raise WrongGroup("the message belongs to another group")
    if epoch != view.epoch:
        raise WrongEpoch(epoch, view.epoch)


def check_sender_may_send(sender: Sender, content_type: ContentType) -> None:
    """Refuse content a non-member sender type is not for (:class:`ContentNotAllowed`)."""
    allowed = _NON_MEMBER_CONTENT.get(sender.sender_type)
    if allowed is not None and content_type != allowed:
        raise ContentNotAllowed(f"{describe(sender)} cannot send a {content_type.name.lower()}")


def member_signature_key(view: EpochView, leaf: int) -> bytes:
    """The signature key of ``leaf`` in this epoch; a leaf outside the tree or blank is :class:`UnknownSender`."""
    if not 0 <= leaf < view.secret_tree.n_leaves:
        raise UnknownSender(leaf, f"is outside a tree of {view.secret_tree.n_leaves} leaves")
    key = view.signature_keys(leaf)
    if key is None:
        raise UnknownSender(leaf, "is blank in this epoch")
    return key


def describe(sender: Sender) -> str:
    """The sender as error messages name it."""
    if isinstance(sender, SenderMember):
        return f"leaf {sender.leaf_index}"
    if isinstance(sender, SenderExternal):
        return f"external sender {sender.sender_index}"
    return sender.sender_type.name.lower().replace("_", " ")
