"""The exit-code contract of network commands: distinct codes, the worst outcome wins, and the docs say it."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from core.errors import StorageStillUnavailable, Unreachable
from jobs.outcome import Outcome, worst
from tests.conftest import ROOT


def test_each_outcome_has_its_own_code_apart_from_usage_and_storage_errors():
    codes = [outcome.exit_code for outcome in Outcome]
    assert len(set(codes)) == len(codes) and Outcome.DONE.exit_code == 0
    assert not {2, StorageStillUnavailable.exit_code} & set(codes)
    assert Outcome.UNREACHABLE.exit_code == Unreachable.exit_code


@given(st.lists(st.sampled_from(list(Outcome))))
def test_the_worst_outcome_wins_whatever_the_order(outcomes):
    found = worst(outcomes)
    assert found == worst(reversed(outcomes)) and (found in outcomes or found is Outcome.DONE)
    if Outcome.FAILED in outcomes:
        assert found is Outcome.FAILED
    elif Outcome.UNREACHABLE in outcomes:
        assert found is Outcome.UNREACHABLE
    elif Outcome.QUEUED in outcomes:
        assert found is Outcome.QUEUED


def test_operations_documents_every_outcome_with_its_code():
    text = (ROOT / "docs" / "operations.md").read_text()
    for outcome in Outcome:
        assert re.search(rf"^\| {outcome.exit_code} \| `{outcome.label}` \|", text, re.MULTILINE), outcome
    for doc in ("marmot.md", "xmtp.md"):
        assert "*Exit codes*" in (ROOT / "docs" / doc).read_text(), doc
