"""Commit races between Tessera XMTP members and real libxmtp v1.10.0 clients through a real
``tessera serve --xmtp-port`` process (issue 36, point 4): the scenarios of tests/xmtp/race_scenarios.py.

Marked ``peer`` (skipped when ``xmtp-bindings`` cannot be installed, failed under
``TESSERA_REQUIRE_PEERS=1``); the 50-round loop is ``slow``.
"""

from __future__ import annotations

import time

import pytest

from tests.xmtp import race_scenarios as races
from tests.xmtp.test_node_with_libxmtp import InProcessPeers, peers  # noqa: F401
from tests.xmtp_node.conftest import libxmtp_client, libxmtp_python  # noqa: F401

pytestmark = pytest.mark.peer


def test_an_add_of_ours_loses_to_a_libxmtp_add_is_rebuilt_and_every_member_agrees(peers: InProcessPeers) -> None:  # noqa: F811
    races.add_races_libxmtp_add(peers)


def test_a_remove_of_ours_races_a_libxmtp_rename_and_every_member_agrees(peers: InProcessPeers) -> None:  # noqa: F811
    races.remove_races_libxmtp_rename(peers)


def test_two_tessera_and_two_libxmtp_members_commit_every_round_and_agree_after_each(peers: InProcessPeers) -> None:  # noqa: F811
    races.four_commit_in_a_loop(peers, rounds=5)


@pytest.mark.slow
def test_fifty_rounds_of_four_members_committing(peers: InProcessPeers, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    started = time.monotonic()
    races.four_commit_in_a_loop(peers, rounds=50)
    with capsys.disabled():
        print(f"\n50 rounds of four committing members: {time.monotonic() - started:.1f} s")
