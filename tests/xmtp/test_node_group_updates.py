"""What ``set-permission`` and ``create-group --permissions custom`` make of policy names and rules, and the
refusal of a forbidden change (:mod:`protocols.xmtp.node_profile.group_updates`), under Hypothesis: the
policies survive the wire, and a change is refused exactly when libxmtp's rules refuse it, with a line naming
the policy and who may make it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.libraries.xmtp_content import policies as rules
from protocols.libraries.xmtp_content.group_context import (
    ConversationType,
    GroupMembership,
    GroupMetadata,
    MutableMetadata,
)
from protocols.libraries.xmtp_content.group_state import GroupState
from protocols.libraries.xmtp_content.permissions import AddMembers, UpdateMetadata, permitted
from protocols.libraries.xmtp_content.policies import PolicySet
from protocols.xmtp.errors import ChangeRefused
from protocols.xmtp.node_profile.group_updates import (
    MEMBER_POLICIES,
    METADATA_POLICIES,
    POLICY_NAMES,
    RULES,
    custom_policies,
    refusal,
    with_policy,
)

ADMIN_POLICIES = ("add_admin", "remove_admin")


@st.composite
def policy_choices(draw: st.DrawFn) -> dict[str, str]:
    """Some policy names, each with a rule libxmtp can carry for it."""
    names = draw(st.lists(st.sampled_from(POLICY_NAMES), unique=True, max_size=len(POLICY_NAMES)))
    return {
        name: draw(st.sampled_from([r for r in RULES if not (name in ADMIN_POLICIES and r == "allow")]))
        for name in names
    }


def _named(policies: PolicySet, name: str) -> rules.Policy:
    if name in MEMBER_POLICIES:
        found: rules.Policy = getattr(policies, name)
        return found
    return policies.metadata_policy(METADATA_POLICIES[name][0])


@given(policy_choices())
def test_custom_policies_hold_each_rule_given_and_survive_the_wire(given_rules: dict[str, str]) -> None:
    made = custom_policies(given_rules)
    assert PolicySet.from_bytes(made.to_bytes()) == made
    defaults = rules.all_members()
    for name in POLICY_NAMES:
        expected = RULES[given_rules[name]] if name in given_rules else _named(defaults, name)
        assert _named(made, name) == expected, name
    both = METADATA_POLICIES["update_message_disappearing"]  # one policy name, two attributes: always alike
    assert len({made.metadata_policy(field) for field in both}) == 1


@pytest.mark.parametrize(
    ("name", "rule", "says"),
    [
        ("add_admin", "allow", "add_admin cannot be 'allow'"),
        ("update_everything", "admin", "no policy 'update_everything'"),
        ("add_member", "everyone", "no policy rule 'everyone'"),
    ],
)
def test_a_policy_or_rule_libxmtp_has_no_form_for_is_refused(name: str, rule: str, says: str) -> None:
    with pytest.raises(ChangeRefused, match=says):
        with_policy(rules.all_members(), name, rule)


ME, ADMIN, SUPER = "me" * 32, "ad" * 32, "su" * 32


@given(
    role=st.sampled_from(["member", "admin", "super_admin"]),
    policy_name=st.sampled_from(list(METADATA_POLICIES)),
    rule=st.sampled_from(list(RULES)),
    adding=st.booleans(),
)
def test_a_change_is_refused_exactly_when_libxmtp_refuses_it_and_the_line_names_the_policy_and_who_may(
    role: str, policy_name: str, rule: str, adding: bool
) -> None:
    policies = with_policy(rules.all_members(), policy_name, rule)
    policies = with_policy(policies, "add_member", rule)
    admins = (ADMIN, *((ME,) if role == "admin" else ()))
    supers = (SUPER, *((ME,) if role == "super_admin" else ()))
    context = GroupState(
        GroupMetadata(ConversationType.GROUP, SUPER),
        MutableMetadata({}, admins, supers),
        GroupMembership(dict.fromkeys((ME, ADMIN, SUPER), 1)),
        policies,
    )
    change = AddMembers(("new",)) if adding else UpdateMetadata(METADATA_POLICIES[policy_name][0])
    why = refusal(context, ME, [change])
    allowed = permitted(change, ME, context.policies, context.mutable, context.metadata)
    assert (why is None) == allowed
    if why is not None:
        assert ("add_member" if adding else policy_name) in why
        if rule == "deny":
            assert "denied to every member" in why
        else:
            assert SUPER in why and (ADMIN in why) == (rule == "admin")
