"""Hypothesis strategies for XMTP content and group-context values (one home for all of them)."""

from __future__ import annotations

from hypothesis import strategies as st

from protocols.libraries.xmtp_content import codecs, group_context, policies
from protocols.libraries.xmtp_content.content_type import ContentTypeId
from protocols.libraries.xmtp_content.encoded import Compression, EncodedContent

text = st.text(max_size=40)
inbox_ids = st.text(alphabet="0123456789abcdef", min_size=1, max_size=64)
parameters = st.dictionaries(st.text(max_size=12), text, max_size=4)
content_type_ids = st.builds(
    ContentTypeId,
    authority=st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="/"), max_size=12),
    type_id=st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters=":"), max_size=12),
    major=st.integers(0, 2**32 - 1),
    minor=st.integers(0, 2**32 - 1),
)
encoded_contents = st.builds(
    EncodedContent,
    type=st.none() | content_type_ids,
    content=st.binary(max_size=64),
    parameters=parameters,
    fallback=st.none() | text,
    compression=st.none(),
)
texts = st.builds(codecs.Text, text)
reactions = st.builds(
    codecs.Reaction,
    reference=text,
    content=text,
    action=st.sampled_from(codecs.ReactionAction),
    schema=st.sampled_from(codecs.ReactionSchema),
    reference_inbox_id=st.just("") | inbox_ids,
    version=st.sampled_from((1, 2)),
)
replies = st.builds(
    codecs.Reply,
    reference=text,
    content=st.builds(codecs.encode, texts | reactions) | encoded_contents,
    reference_inbox_id=st.none() | inbox_ids,
)
_inbox_tuples = st.lists(inbox_ids, max_size=3).map(tuple)
group_updates = st.builds(
    codecs.GroupUpdated,
    initiated_by_inbox_id=inbox_ids,
    added_inboxes=_inbox_tuples,
    removed_inboxes=_inbox_tuples,
    metadata_field_changes=st.lists(
        st.builds(codecs.MetadataFieldChange, text, st.none() | text, st.none() | text), max_size=3
    ).map(tuple),
    left_inboxes=_inbox_tuples,
    added_admin_inboxes=_inbox_tuples,
    removed_admin_inboxes=_inbox_tuples,
    added_super_admin_inboxes=_inbox_tuples,
    removed_super_admin_inboxes=_inbox_tuples,
)
remote_attachments = st.builds(
    codecs.RemoteAttachment,
    url=text,
    content_digest=st.text(alphabet="0123456789abcdef", max_size=64),
    secret=st.binary(max_size=32),
    salt=st.binary(max_size=32),
    nonce=st.binary(max_size=12),
    scheme=st.sampled_from(["https", "http"]),
    content_length=st.none() | st.integers(0, 2**32 - 1),
    filename=st.none() | text,
)
_unknown_types = content_type_ids.filter(lambda kind: kind.authority != "xmtp.org")
unknown_contents = st.builds(
    codecs.UnknownContent,
    type_id=st.none() | _unknown_types,
    parameters=parameters,
    content=st.binary(max_size=64),
    fallback=st.none() | text,
    compression=st.none() | st.sampled_from(Compression),
)
contents = texts | reactions | replies | group_updates | remote_attachments | unknown_contents

memberships = st.builds(
    group_context.GroupMembership,
    members=st.dictionaries(inbox_ids, st.integers(0, 2**64 - 1), max_size=5),
    failed_installations=st.lists(st.binary(min_size=32, max_size=32), max_size=2).map(tuple),
)
group_metadata = st.builds(
    group_context.GroupMetadata,
    conversation_type=st.sampled_from(group_context.ConversationType),
    creator_inbox_id=inbox_ids,
    dm_members=st.none() | st.tuples(inbox_ids, inbox_ids),
    creator_account_address=st.just("") | text,
)
mutable_metadata = st.builds(
    group_context.MutableMetadata,
    attributes=st.dictionaries(st.sampled_from(group_context.SUPPORTED_FIELDS) | text, text, max_size=6),
    admins=_inbox_tuples,
    super_admins=_inbox_tuples,
)


def _policy(rules: list[policies.Rule]) -> st.SearchStrategy[policies.Policy]:
    base = st.sampled_from([policies.Base(rule) for rule in rules])
    return st.recursive(
        base,
        lambda inner: (
            st.builds(policies.AllOf, st.lists(inner, max_size=3).map(tuple))
            | st.builds(policies.AnyOf, st.lists(inner, max_size=3).map(tuple))
        ),
        max_leaves=6,
    )


every_rule = list(policies.Rule)
membership_policies = _policy(every_rule)
permissions_policies = _policy([rule for rule in every_rule if rule is not policies.Rule.ALLOW])
policy_sets = st.builds(
    policies.PolicySet,
    add_member=membership_policies,
    remove_member=membership_policies,
    update_metadata=st.dictionaries(
        st.sampled_from(group_context.SUPPORTED_FIELDS) | text, membership_policies, max_size=4
    ),
    add_admin=permissions_policies,
    remove_admin=permissions_policies,
    update_permissions=permissions_policies,
)
