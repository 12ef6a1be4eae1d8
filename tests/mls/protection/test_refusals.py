"""What protect and unprotect refuse besides tampering: other groups and epochs, senders, content, misuse.

Also the non-member senders of PublicMessages (external senders and new
members), whose signature key the caller hands over, and that no repr
shows a secret.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.errors import InvalidArgument, InvalidSignature, WrongEpoch
from protocols.libraries.mls.messages import (
    ApplicationData,
    AuthenticatedContent,
    FramedContent,
    MLSMessage,
    PublicMessage,
    Remove,
    SenderExternal,
    SenderMember,
    SenderNewMemberCommit,
    SenderNewMemberProposal,
)
from protocols.libraries.mls.messages.registries import WireFormat
from protocols.libraries.mls.protection import (
    ContentNotAllowed,
    EpochView,
    MembershipTagMismatch,
    NotFramedContent,
    UnknownSender,
    WrongGroup,
    membership_tag,
    pad_to_multiple,
    padding_length,
    protect_private,
    protect_public,
    public_message,
    sign_content,
    sign_own_content,
    unprotect,
    unprotect_public,
    with_confirmation_tag,
)
from tests.mls.codec._samples import SAMPLES
from tests.mls.protection._cases import CASES, RECEIVER, SENDER, VECTORS, Group

PUBLIC = WireFormat.MLS_PUBLIC_MESSAGE
PRIVATE = WireFormat.MLS_PRIVATE_MESSAGE


def _public(group: Group, name: str) -> PublicMessage:
    message = group.message(name).message
    assert isinstance(message, PublicMessage)
    return message


def _view_of(group: Group, **context_changes: Any) -> EpochView:
    view = group.receiver()
    return attrs.evolve(view, group_context=attrs.evolve(view.group_context, **context_changes))


@CASES
def test_messages_of_another_group_or_epoch_are_refused(vector: dict[str, Any]) -> None:
    group = Group(vector)
    other_group = _view_of(group, group_id=b"another group")
    later_epoch = _view_of(group, epoch=vector["epoch"] + 1)
    for name in ("proposal_pub", "commit_priv", "application_priv"):
        with pytest.raises(WrongGroup):
            unprotect(other_group, group.message(name))
        with pytest.raises(WrongEpoch) as refused:
            unprotect(later_epoch, group.message(name))
        assert (refused.value.message_epoch, refused.value.state_epoch) == (vector["epoch"], vector["epoch"] + 1)


@CASES
def test_another_group_context_breaks_the_signature(vector: dict[str, Any]) -> None:
    group = Group(vector)
    view = _view_of(group, tree_hash=b"\x00" * len(group.group_context.tree_hash))
    with pytest.raises(InvalidSignature):
        unprotect(view, group.message("application_priv"))
    with pytest.raises(MembershipTagMismatch):  # the membership tag covers the context too, and is checked first
        unprotect(view, group.message("proposal_pub"))


@CASES
def test_a_wrong_or_missing_membership_tag_is_refused(vector: dict[str, Any]) -> None:
    group = Group(vector)
    message = _public(group, "proposal_pub")
    assert message.membership_tag is not None
    wrong = bytes([message.membership_tag[0] ^ 1]) + message.membership_tag[1:]
    for tag in (wrong, message.membership_tag[:-1], b"", None):
        with pytest.raises(MembershipTagMismatch):
            unprotect_public(group.receiver(), attrs.evolve(message, membership_tag=tag))


@CASES
def test_a_bad_signature_under_a_good_membership_tag_is_refused(vector: dict[str, Any]) -> None:
    group = Group(vector)
    message = _public(group, "proposal_pub")
    forged = AuthenticatedContent(PUBLIC, message.content, attrs.evolve(message.auth, signature=b"\x00" * 8))
    retagged = public_message(group.suite, forged, group.group_context, group.receiver().membership_key)
    with pytest.raises(InvalidSignature) as refused:
        unprotect_public(group.receiver(), retagged)
    assert not isinstance(refused.value, MembershipTagMismatch)


@CASES
def test_application_data_in_a_public_message_is_refused(vector: dict[str, Any]) -> None:
    group = Group(vector)
    authenticated = sign_own_content(group.sender(), group.signature_private, PUBLIC, ApplicationData(b"hi"))
    tag = membership_tag(group.suite, group.sender().membership_key, authenticated, group.group_context)
    with pytest.raises(ContentNotAllowed):
        unprotect_public(group.receiver(), PublicMessage(authenticated.content, authenticated.auth, tag))


@CASES
def test_a_member_sender_outside_the_tree_is_refused(vector: dict[str, Any]) -> None:
    group = Group(vector)
    message = _public(group, "proposal_pub")
    outside = attrs.evolve(message, content=attrs.evolve(message.content, sender=SenderMember(9)))
    with pytest.raises(UnknownSender, match="outside") as refused:
        unprotect_public(group.view(RECEIVER, keys={9: group.signature_public}), outside)
    assert refused.value.leaf == 9


def _framed(group: Group, sender: Any, content: Any) -> FramedContent:
    context = group.group_context
    return FramedContent(context.group_id, context.epoch, sender, b"", content)


@CASES
def test_non_member_senders_verify_with_the_key_passed_in(vector: dict[str, Any]) -> None:
    group = Group(vector)
    cs, context = group.suite, group.group_context
    outsider = cs.generate_signature_key_pair()
    commit = group.raw("commit")
    tag = _public(group, "commit_pub").auth.confirmation_tag
    assert tag is not None
    cases = [
        (SenderExternal(0), Remove(1), None),
        (SenderNewMemberProposal(), Remove(1), None),
        (SenderNewMemberCommit(), commit, tag),
    ]
    for sender, content, confirmation in cases:
        # Signed without the group context where the sender's signature does not cover it (section 6.1).
        authenticated = sign_content(cs, outsider.private, PUBLIC, _framed(group, sender, content), context)
        if confirmation is not None:
            authenticated = with_confirmation_tag(authenticated, confirmation)
        message = public_message(cs, authenticated, None if confirmation is None else context)
        assert message.membership_tag is None
        assert unprotect_public(group.receiver(), message, sender_key=outsider.public) == authenticated
        with pytest.raises(InvalidSignature):
            unprotect_public(group.receiver(), message, sender_key=group.signature_public)
        with pytest.raises(InvalidArgument):
            unprotect_public(group.receiver(), message)


@CASES
def test_non_member_senders_send_only_their_content(vector: dict[str, Any]) -> None:
    group = Group(vector)
    cs, context = group.suite, group.group_context
    outsider = cs.generate_signature_key_pair()
    tag = _public(group, "commit_pub").auth.confirmation_tag
    assert tag is not None
    commit_content = group.raw("commit")
    for sender, content in (
        (SenderExternal(0), commit_content),
        (SenderNewMemberProposal(), commit_content),
        (SenderNewMemberCommit(), Remove(1)),
    ):
        authenticated = sign_content(cs, outsider.private, PUBLIC, _framed(group, sender, content), context)
        if content is commit_content:
            authenticated = with_confirmation_tag(authenticated, tag)
        message = PublicMessage(authenticated.content, authenticated.auth, None)
        with pytest.raises(ContentNotAllowed):
            unprotect_public(group.receiver(), message, sender_key=outsider.public)
        with pytest.raises(ContentNotAllowed):
            public_message(cs, authenticated, context)


@CASES
def test_a_members_public_message_takes_no_sender_key(vector: dict[str, Any]) -> None:
    group = Group(vector)
    with pytest.raises(InvalidArgument):
        unprotect_public(group.receiver(), _public(group, "proposal_pub"), sender_key=group.signature_public)


def test_an_mls_message_without_framed_content_is_refused() -> None:
    group = Group(VECTORS[0])
    key_package = decode(MLSMessage, SAMPLES["mls_key_package"][1])
    with pytest.raises(NotFramedContent):
        unprotect(group.receiver(), key_package)


@CASES
def test_protect_refuses_content_it_cannot_send(vector: dict[str, Any]) -> None:
    group = Group(vector)
    sender, key = group.sender(), group.signature_private
    proposal = group.raw("proposal")
    public_proposal = sign_own_content(sender, key, PUBLIC, proposal)
    private_proposal = sign_own_content(sender, key, PRIVATE, proposal)
    untagged_commit = sign_own_content(sender, key, PRIVATE, group.raw("commit"))
    other_epoch = attrs.evolve(
        private_proposal, content=attrs.evolve(private_proposal.content, epoch=vector["epoch"] + 1)
    )
    other_sender = attrs.evolve(
        private_proposal, content=attrs.evolve(private_proposal.content, sender=SenderMember(0))
    )
    tagged_proposal = attrs.evolve(private_proposal, auth=attrs.evolve(private_proposal.auth, confirmation_tag=b"t"))
    for refused in (public_proposal, untagged_commit, other_epoch, other_sender, tagged_proposal):
        with pytest.raises(InvalidArgument):
            protect_private(sender, refused)
    for refused in (private_proposal, other_sender):
        with pytest.raises(InvalidArgument):
            protect_public(sender, refused)
    with pytest.raises(InvalidArgument):
        with_confirmation_tag(private_proposal, b"tag")
    with pytest.raises(InvalidArgument):
        sign_content(group.suite, key, PUBLIC, _framed(group, SenderMember(SENDER), proposal), None)


def test_padding_rules_and_their_refusals() -> None:
    assert [padding_length(pad_to_multiple(16), n) for n in (0, 1, 15, 16, 17)] == [0, 15, 1, 0, 15]
    assert padding_length(7, 100) == 7
    for bad in (-1, lambda _: -1, lambda _: 1.5):
        with pytest.raises(InvalidArgument):
            padding_length(bad, 10)  # type: ignore[arg-type]
    for block in (0, -4):
        with pytest.raises(InvalidArgument):
            pad_to_multiple(block)


@CASES
def test_a_view_must_fit_its_suite_and_tree(vector: dict[str, Any]) -> None:
    group = Group(vector)
    view = group.receiver()
    with pytest.raises(InvalidArgument):
        attrs.evolve(view, own_leaf=2)
    other_suite = 1 if group.suite.id != 1 else 2
    with pytest.raises(InvalidArgument):
        attrs.evolve(view, group_context=attrs.evolve(view.group_context, cipher_suite=other_suite))


@CASES
def test_no_secret_shows_in_a_repr(vector: dict[str, Any]) -> None:
    group = Group(vector)
    view = group.receiver()
    view, _ = unprotect(view, group.message("application_priv"))
    shown = repr(view)
    for name in ("membership_key", "sender_data_secret", "encryption_secret"):
        assert vector[name] not in shown and repr(bytes.fromhex(vector[name])) not in shown
    assert group.signature_public.hex() not in shown  # keys go through the lookup, which stays out of the repr
