"""Marmot's prepare stage: a backfill's signatures and envelopes checked in worker processes
(protocols/marmot/transport/prepared.py), the answers carried on the items through the core's door: the
same end as the writer alone, the writer's own checks skipped only where the answer is provably the same,
and a forged answer never taken."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs
import pytest

from core import contract
from core.queues import WorkItem
from protocols.marmot.errors import InvalidEvent
from protocols.marmot.state.store import load_joined
from protocols.marmot.transport import prepare_stage, prepared
from protocols.marmot.wire import nostr, outer
from tests.marmot.test_ingest import assert_matches, joined, stream


@pytest.fixture
def two_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESSERA_MARMOT_BACKFILL_WORKERS", "2")
    monkeypatch.setattr(prepared, "LEAST_FOR_WORKERS", 1)  # the test stream is smaller than a real backfill


def _counting_verifications(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How often this process (the writer) runs a BIP-340 verification."""
    calls = [0]
    real = nostr.schnorr_verify

    def counted(*args: bytes) -> bool:
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(nostr, "schnorr_verify", counted)
    return calls


def _backfill_reversed(marmot_app, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[bytes], list[int]]:
    """The test stream backfilled newest first (as a relay answers), checked against its ground truth: the
    report, the lines, and how often the writer ran a BIP-340 verification."""
    sim = stream()
    app = joined(marmot_app, sim)
    verifications = _counting_verifications(monkeypatch)
    lines = list(reversed(sim.lines))
    report = app.runtime.run_command("marmot.backfill", {"group": sim.expected["group"], "events": lines}).result
    assert_matches(app, sim)
    return report, lines, verifications


def test_a_backfill_with_workers_ends_as_the_writer_alone_does(marmot_app, two_workers, monkeypatch) -> None:
    report, lines, verifications = _backfill_reversed(marmot_app, monkeypatch)
    valid = len(lines) - report.invalid
    assert report.prepared_ahead == valid > 0
    # The writer verified only what no worker vouched for: the invalid lines (sorting the batch, then parking).
    assert verifications[0] <= 2 * report.invalid < valid


def test_without_workers_the_writer_checks_each_event_once(marmot_app, monkeypatch) -> None:
    monkeypatch.setenv("TESSERA_MARMOT_BACKFILL_WORKERS", "0")
    monkeypatch.setattr(prepared, "LEAST_FOR_WORKERS", 1)
    report, lines, verifications = _backfill_reversed(marmot_app, monkeypatch)
    assert report.prepared_ahead == 0
    valid = len(lines) - report.invalid
    # A valid event is verified once, sorting the batch: the pipeline takes that answer.  An invalid one is
    # met again by the decoder, which parks it with its reason.
    assert valid <= verifications[0] <= valid + 2 * report.invalid


def test_an_answer_under_a_key_the_state_does_not_hold_is_not_taken(marmot_app) -> None:
    sim = stream(garbage=0, races=0)
    app = joined(marmot_app, sim)
    with app.db.read():
        from core.state import ProtocolState

        state = load_joined(ProtocolState(app.db, "marmot"), sim.expected["group"]).state
    content = next(
        json.loads(line)["content"] for line in sim.lines if outer.open_content(state, json.loads(line)["content"])
    )
    real = outer.open_content(state, content)
    assert real is not None
    forged = (real[0], bytes(32), b"forged MLS bytes")  # a key no epoch of ours has
    assert outer.open_content(state, content, forged) == real
    wrong_epoch = (real[0] + 1, outer.current_key(state), b"forged MLS bytes")
    assert outer.open_content(state, content, wrong_epoch) == real


def test_forged_answers_on_the_items_change_nothing(marmot_app, monkeypatch) -> None:
    """Answers whose envelope opens under no key of ours, or was opened from other content, or whose
    signature is another event's: the backfill ends exactly as with no answers at all."""
    sim = stream()
    app = joined(marmot_app, sim)

    def forging(runtime: contract.Runtime, items: Sequence[WorkItem]) -> list[prepared.Answer | None]:
        forged: list[prepared.Answer | None] = []
        for item in items:
            try:
                event = json.loads(item.blob)
            except ValueError:
                forged.append(None)
                continue
            content = event.get("content", "")
            opened = (0, bytes(32), b"forged MLS bytes")
            forged.append(prepared.Answer("00" * 32, event.get("pubkey", ""), "00" * 64, content, opened))
        return forged

    protocol = app.runtime.registry.protocols["marmot"]
    assert protocol.prepare is not None and protocol.prepare.batch is prepare_stage.stage
    forged_stage = attrs.evolve(protocol.prepare, batch=forging, least=1)  # the stream is a small batch
    monkeypatch.setitem(app.runtime.registry.protocols, "marmot", attrs.evolve(protocol, prepare=forged_stage))
    report = app.runtime.run_command("marmot.backfill", {"group": sim.expected["group"], "events": sim.lines}).result
    assert report.prepared_ahead > 0
    assert_matches(app, sim)


SECRET = bytes(range(1, 33))


def _group_event(content: str) -> dict:
    unsigned = {"pubkey": "", "created_at": 1_700_000_000, "kind": 445, "tags": [["h", "ab" * 32]], "content": content}
    return nostr.sign_event(unsigned, SECRET)


def test_a_vouched_signature_does_not_cover_altered_content() -> None:
    event = _group_event("hello")
    altered = {**event, "content": "goodbye"}
    vouched = (event["id"], event["pubkey"], event["sig"])
    nostr.verify_event(event, verified=vouched)
    with pytest.raises(InvalidEvent) as raised:
        nostr.verify_event(altered, verified=vouched)
    assert raised.value.reason == "id_mismatch"
    with pytest.raises(InvalidEvent) as raised:
        nostr.verify_event({**event, "sig": "00" * 64}, verified=vouched)  # another signature: checked here
    assert raised.value.reason == "bad_signature"


def test_prepare_answers_none_for_what_does_not_verify_or_name_a_group() -> None:
    good = _group_event("AAAA")
    bad_sig = {**good, "sig": "00" * 64}
    not_group = nostr.sign_event({**good, "kind": 1, "id": "", "sig": ""}, SECRET)
    lines = [json.dumps(e).encode() for e in (good, bad_sig, not_group)] + [b"not json"]
    answers = prepared.prepare(lines, {"ab" * 32: [(0, bytes(32))]})
    assert answers[0] is not None and answers[0].id == good["id"] and answers[0].opened is None
    assert answers[1:] == [None, None, None]
