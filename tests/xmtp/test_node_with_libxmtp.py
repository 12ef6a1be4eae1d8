"""A Tessera XMTP member (the plugin's node profile) among real libxmtp v1.10.0 clients, through a real
``tessera serve --xmtp-port`` process: the scenarios of tests/xmtp/interop_scenarios.py, each one a test.

The Tessera side runs the App's commands and the tick's own passes in this
process; the libxmtp clients run in their own processes.  Marked ``peer``:
skipped when ``xmtp-bindings`` cannot be installed, failed under
``TESSERA_REQUIRE_PEERS=1``; ``slow`` runs more members and messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest

from core.clock import ManualClock
from projectors.testkit import assert_same_tables
from protocols import xmtp
from protocols.xmtp.state import Vault
from tests.xmtp import interop_scenarios as scenarios
from tests.xmtp import leave_scenarios
from tests.xmtp.node_member import NodeMember
from tests.xmtp_node.conftest import libxmtp_client, libxmtp_python  # noqa: F401
from tests.xmtp_node.libxmtp_peer import LibxmtpClient
from tests.xmtp_node.node_process import NodeProcess

pytestmark = pytest.mark.peer


@attrs.define
class InProcessPeers:
    url: str
    make_app: Any
    clients: Callable[[str], LibxmtpClient]
    clock: ManualClock

    def libxmtp(self, name: str) -> LibxmtpClient:
        return self.clients(name)

    made: list[NodeMember] = attrs.Factory(list)

    def tessera(self, name: str) -> NodeMember:
        member = NodeMember.create(self.make_app([xmtp], ["xmtp"]), self.url)
        self.made.append(member)
        return member

    def tessera_installation(self, name: str, of: NodeMember) -> NodeMember:
        return of.another_installation(self.make_app([xmtp], ["xmtp"]))

    def pass_time(self, seconds: float) -> None:
        self.clock.advance(int(seconds * 1000))


@pytest.fixture
def peers(
    node: NodeProcess,
    make_app: Any,
    libxmtp_client: Callable[[str], LibxmtpClient],  # noqa: F811
    clock: ManualClock,
) -> InProcessPeers:
    return InProcessPeers(node.url, make_app, libxmtp_client, clock)


def test_invited_by_libxmtp_then_messages_both_ways(peers: InProcessPeers) -> None:
    scenarios.messages_both_ways(peers, count=10)


@pytest.mark.slow
def test_invited_by_libxmtp_then_fifty_messages_each_way_among_four(peers: InProcessPeers) -> None:
    scenarios.messages_both_ways(peers, count=50, others=3)


def test_reactions_replies_and_unknown_content_from_libxmtp(peers: InProcessPeers) -> None:
    scenarios.content_types(peers)


def test_reactions_and_replies_sent_by_tessera_are_libxmtps_and_answered(peers: InProcessPeers) -> None:
    scenarios.reactions_and_replies_by_tessera(peers)


def test_libxmtp_adds_and_removes_members_and_changes_metadata(peers: InProcessPeers) -> None:
    scenarios.membership_and_metadata(peers)


def _rebuilt_equals_live_and_twice_changes_nothing(peers: InProcessPeers, make_projector_kit: Any) -> None:
    """The projector kit on our member's log: a rebuild equals the live tables, each event twice changes nothing."""
    (ours,) = peers.made
    kit = make_projector_kit([xmtp], ["xmtp"])
    tables = kit.owned_tables(ours.app)
    forward = kit.replay(ours.app)
    assert_same_tables(ours.app.db.conn, forward, tables, "a rebuild from the log differs from the live tables")
    assert_same_tables(forward, kit.replay(ours.app, times=2), tables, "applying each event twice changed a table")


def test_projections_of_a_libxmtp_group_rebuild_equal_and_each_event_twice_changes_nothing(
    peers: InProcessPeers, make_projector_kit: Any
) -> None:
    """The node profile's facts (welcome, messages of every content type, commits, metadata, our intents)
    under the projector kit: a rebuild from the log equals the live tables."""
    scenarios.membership_and_metadata(peers)
    _rebuilt_equals_live_and_twice_changes_nothing(peers, make_projector_kit)


def test_a_dm_opened_by_libxmtp(peers: InProcessPeers) -> None:
    scenarios.direct_message(peers)


def test_removed_by_libxmtp_the_group_turns_inactive_and_queued_messages_fail(peers: InProcessPeers) -> None:
    scenarios.removed_by_libxmtp(peers)


def test_removed_then_re_added_by_libxmtp_the_group_is_read_again(
    peers: InProcessPeers, make_projector_kit: Any
) -> None:
    """The scenario, then the projector kit on its log (the re-add's fact among the removal's): a rebuild from
    the log equals the live tables, and each event twice changes nothing."""
    scenarios.readded_after_removal(peers)
    _rebuilt_equals_live_and_twice_changes_nothing(peers, make_projector_kit)


def test_a_second_installation_of_the_tessera_inbox_is_added_by_libxmtp(peers: InProcessPeers) -> None:
    scenarios.second_installation(peers)


def test_a_welcome_uses_up_its_key_package_and_a_fresh_one_is_uploaded(peers: InProcessPeers) -> None:
    """Forward secrecy: the KeyPackage a welcome opened with has its private keys deleted with the welcome's
    transaction, and the key-package job uploads a fresh one for the next inviter."""
    _, _, ours, _ = scenarios.invited(peers)
    with ours.app.db.read():
        held = Vault.of(ours.app.db).key_package_refs()
        published = [
            bytes(row[0])
            for row in ours.app.db.all("SELECT ref FROM xmtp_published_key_packages ORDER BY published_at_ns")
        ]
    assert len(published) == 2 and held == published[-1:]


def test_update_key_is_a_commit_libxmtp_processes(peers: InProcessPeers) -> None:
    scenarios.key_update_by_tessera(peers)


def test_a_key_update_that_loses_its_epoch_to_libxmtp_is_rebuilt_and_both_agree(peers: InProcessPeers) -> None:
    scenarios.key_update_loses_the_race(peers)


def test_a_group_created_by_tessera_welcomes_libxmtp_members_who_list_the_same_members(peers: InProcessPeers) -> None:
    scenarios.created_by_tessera(peers)


def test_an_add_the_permissions_forbid_is_refused_before_it_is_recorded_or_ends_in_error_when_rebuilt(
    peers: InProcessPeers,
) -> None:
    scenarios.forbidden_add_refused_locally(peers)


def test_metadata_admins_and_permissions_both_ways_and_forbidden_changes_refused_on_both_sides(
    peers: InProcessPeers,
) -> None:
    scenarios.group_changes_both_ways(peers)


def test_an_installation_added_to_a_member_inbox_later_is_committed_in_before_our_next_send(
    peers: InProcessPeers,
) -> None:
    scenarios.installations_follow(peers)


def test_a_dm_opened_by_tessera_is_libxmtp_s_dm_and_found_again(peers: InProcessPeers) -> None:
    scenarios.dm_opened_by_tessera(peers)


def test_a_libxmtp_member_that_leaves_tesseras_group_is_removed_by_the_tick_and_our_own_leave_is_refused(
    peers: InProcessPeers,
) -> None:
    leave_scenarios.libxmtp_member_leaves_tessera_group(peers)


def test_tessera_leaves_a_libxmtp_group_removed_by_libxmtps_worker_and_says_why(
    peers: InProcessPeers, make_projector_kit: Any
) -> None:
    """The scenario, then the projector kit on its log (our leave request and the removal after it): a rebuild
    from the log equals the live tables, and each event twice changes nothing."""
    leave_scenarios.tessera_leaves_libxmtp_group(peers)
    _rebuilt_equals_live_and_twice_changes_nothing(peers, make_projector_kit)
