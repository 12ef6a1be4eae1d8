"""Any arrival order with the default windows: more commits than the past-epoch window keeps epochs.

A member keeps the keys of only a few past epochs (``TESSERA_MARMOT_PAST_EPOCHS``,
5 by default).  A relay answers a catch-up newest first, so a member that
applied commits as they came would push the older messages out of that window
before reading them.  What arrived together is therefore read in its authors'
order: a commit waits until the events that arrived with it were looked at,
and waiting events are woken in ``(created_at, id)`` order.  Then:

- one delivery, in any order, with duplicates and crashes, ends exactly where
  time-ordered delivery ends, however many commits and races it holds (a
  ``marmot sync`` queues its whole catch-up as one delivery);
- deliveries in several batches in any order — among them a catch-up paged
  newest first with a tick after each page — differ from time order only where
  the window truly forbade reading: an event whose epoch had left the window
  before the event arrived, which says so (``epoch_expired``), still waits, or
  was dropped as undecryptable — never ``EpochInvalidated``, never a message
  of an epoch before a race;
- and in those, every commit that came while its epoch was inside the windows
  is judged as in time order (applied, ``commit_lost_race``, ...): a commit
  held behind a batch is released when its race's other commit is applied.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from core.status import COUNTER_PREFIX
from protocols.marmot import settings as marmot_settings
from protocols.marmot import simulate
from protocols.marmot.read.history import GroupHistoryStore
from protocols.marmot.wire import nostr
from tests.marmot._orders import assert_ground_truth, outcome, run, split

PAST_EPOCHS = marmot_settings.MarmotSettings().past_epochs


def _sim(**config) -> simulate.Simulation:
    return simulate.simulate(simulate.Config(**config))


# --- the report's stream, pinned --------------------------------------------------------------------


@pytest.mark.parametrize("order", ["reversed", "paged"])
def test_the_reported_newest_first_catch_up_reads_every_rumor(tmp_path, settings, order):
    """5 members, 600 messages, 8 commits, 3 races (epochs 4, 5, 8): reversed, 163 rumors of epoch 1 were
    marked EpochInvalidated (opened with the keys a losing branch shares with the main chain); all 601 now."""
    sim = _sim(members=5, messages=600, commits=8, races=3, garbage=6, duplicates=40, seed=1234)
    lines = simulate.arrange(sim.lines, order, random.Random(0), page=100)
    app = run(str(tmp_path / f"{order}.db"), settings, [sim], [lines])
    try:
        assert_ground_truth(app, sim)
        assert len(GroupHistoryStore(app.db, sim.expected["group"]).query_rumors(limit=10**6)) == 601
    finally:
        app.close()


# --- deep streams: 8-12 commits, 3+ races ------------------------------------------------------------

DEEP = st.fixed_dictionaries(
    {
        "members": st.integers(3, 4),
        "messages": st.integers(30, 60),
        "commits": st.integers(8, 12),
        "races": st.integers(3, 4),
        "garbage": st.integers(0, 3),
        "duplicates": st.integers(0, 5),
        "deletions": st.integers(0, 3),
        "seed": st.integers(0, 2**32 - 1),
    }
)
ONE_DELIVERY = st.fixed_dictionaries(
    {
        "order": st.sampled_from(simulate.ORDERS),
        "page": st.integers(3, 20),
        "crashes": st.lists(st.integers(1, 60), max_size=3),
        "rng": st.integers(0, 2**32 - 1),
    }
)
BATCHES = st.fixed_dictionaries(
    {
        "order": st.sampled_from(simulate.ORDERS),
        "page": st.integers(3, 20),
        "batches": st.integers(2, 5),
        "crashes": st.lists(st.integers(1, 60), max_size=2),
        "rng": st.integers(0, 2**32 - 1),
    }
)


def _reference(path: str, core_settings, sim: simulate.Simulation) -> tuple[dict, int]:
    """Time-ordered delivery's outcome, and how many events it dropped as never readable."""
    app = run(path, core_settings, [sim], [simulate.arrange(sim.lines, "time", random.Random(0))])
    try:
        assert_ground_truth(app, sim)
        return outcome(app, sim.expected["group"]), _dropped(app)
    finally:
        app.close()


def _dropped(app) -> int:
    """Events dropped for good and counted, not kept: undecryptable, or evicted by the wait budget."""
    return sum(
        app.db.integer("SELECT value FROM kv WHERE key = ?", (f"{COUNTER_PREFIX}dropped.marmot.{reason}",)) or 0
        for reason in ("undecryptable", "wait_budget")
    )


def check_one_delivery(tmp_path, core_settings, config: dict, delivery: dict) -> None:
    """Everything arrives before the tick: any order ends where time order ends."""
    sim = _sim(**config)
    expected, _ = _reference(str(tmp_path / "time.db"), core_settings, sim)
    lines = simulate.arrange(sim.lines, delivery["order"], random.Random(delivery["rng"]), page=delivery["page"])
    app = run(str(tmp_path / "any.db"), core_settings, [sim], [lines], delivery["crashes"])
    try:
        assert outcome(app, sim.expected["group"]) == expected
        assert_ground_truth(app, sim)
    finally:
        app.close()


def check_pages_newest_first(tmp_path, core_settings, config: dict, page: int, crashes: list[int]) -> None:
    """A catch-up paged back from the newest events, each page ticked before the next is fetched: the pages
    after the one with the oldest commit come when the group has moved on."""
    sim = _sim(**config)
    by_time = simulate.arrange(sim.lines, "time", random.Random(0))
    pages = [by_time[i : i + page] for i in range(0, len(by_time), page)][::-1]
    check_only_the_window_forbids(tmp_path, core_settings, sim, pages, crashes)


def check_batches(tmp_path, core_settings, config: dict, delivery: dict) -> None:
    """Batches in any order, ticked one after the other."""
    sim = _sim(**config)
    lines = simulate.arrange(sim.lines, delivery["order"], random.Random(delivery["rng"]), page=delivery["page"])
    check_only_the_window_forbids(tmp_path, core_settings, sim, split(lines, delivery["batches"]), delivery["crashes"])


def check_only_the_window_forbids(tmp_path, core_settings, sim, batches: list[list[bytes]], crashes: list[int]):
    """Each difference from time order is an event whose epoch had left the window before it arrived, and
    it says so (``epoch_expired``) or waits; everything else — messages, states, the final epoch — is as in
    time order."""
    gid = sim.expected["group"]
    expected, dropped_in_time_order = _reference(str(tmp_path / "time.db"), core_settings, sim)
    app, epochs_after = _run_noting_epochs(
        str(tmp_path / "batches.db"), core_settings, sim, batches, {"crashes": crashes}
    )
    try:
        got = outcome(app, gid)
        joined = got["group"][0][4]
        first_batch = _first_batch_of_each_event(batches)
        reference_outer = {row[0]: row for row in expected["outer"]}
        differing = [row for row in got["outer"] if reference_outer.get(row[0]) != row]
        for row in differing:
            outer_id, state, epoch, reason = row[0], row[2], row[4], row[7]
            assert (state, reason) == ("Failed", "epoch_expired"), f"{row} vs {reference_outer.get(outer_id)}"
            _assert_window_forbade(outer_id.hex(), epoch, first_batch, epochs_after, joined)
        missing = set(reference_outer) - {row[0] for row in got["outer"]}
        untaken = _branches_never_taken(reference_outer, differing, missing)
        for outer_id in missing:  # never opened: its epoch's keys were gone when it came (it waits, or was dropped)
            reference = reference_outer[outer_id]
            if reference[2] == "EpochInvalidated" and any(epoch < reference[4] for epoch in untaken):
                continue  # read in time order only on a branch that lost, which this delivery could never take
            _assert_window_forbade(outer_id.hex(), reference[4], first_batch, epochs_after, joined)
        waiting_ids = {bytes.fromhex(nostr.parse_event(blob)["id"]) for blob in got["waiting"]}
        assert len(missing - waiting_ids) <= _dropped(app) - dropped_in_time_order
        expired = {row[0] for row in differing} | missing
        expired_rumors = {reference_outer[o][5] for o in expired if reference_outer[o][5] is not None}
        # A message read while its epoch was in the window stays shown when its deletion (a rumor of the same
        # epoch) came after the window had left that epoch: the deletion is expired, so its targets differ too.
        expired_rumors |= {target for target, _, deletion, _ in expected["deletions"] if deletion in expired_rumors}
        assert [m for m in got["messages"] if m[0] not in expired_rumors] == [
            m for m in expected["messages"] if m[0] not in expired_rumors
        ]
        assert got["group"][0][0] == expected["group"][0][0]  # the same final epoch
    finally:
        app.close()


def _run_noting_epochs(path: str, core_settings, sim, batches: list[list[bytes]], delivery: dict):
    """The app after ``batches`` (and ``delivery``'s crashes), and the group's epoch after each batch."""
    gid = bytes.fromhex(sim.expected["group"])
    epochs_after: list[int] = []

    def note_epoch(app) -> None:
        epochs_after.append(app.db.value("SELECT epoch FROM marmot_groups WHERE gid = ?", (gid,)))

    return run(path, core_settings, [sim], batches, delivery["crashes"], note_epoch), epochs_after


def _branches_never_taken(reference_outer: dict, differing: list, missing: set) -> set[int]:
    """Epochs of the commits that lost a race in time order and that this delivery could not even weigh,
    because they came when the window forbade them: the messages sent on their branch are unreadable here,
    as they are for any member that never applied that branch."""
    expired = {row[0] for row in differing if (row[2], row[7]) == ("Failed", "epoch_expired")}
    return {
        row[4]
        for outer_id, row in reference_outer.items()
        if row[3] == "commit" and row[7] == "commit_lost_race" and outer_id in expired | missing
    }


def _first_batch_of_each_event(batches: list[list[bytes]]) -> dict[str, int]:
    """The batch each event first came in.  A forged copy (the event's id with a broken signature, garbage the
    stream mixes in) is not the event: it is parked, and the event is read, or not, when its signed copy comes."""
    first: dict[str, int] = {}
    for number, batch in enumerate(batches):
        for line in batch:
            try:
                event = nostr.parse_event(line)
                nostr.verify_event(event)
            except Exception:  # garbage lines are no events
                continue
            first.setdefault(event["id"], number)
    return first


def _group_epoch_when_it_came(outer_id: str, first_batch: dict, epochs_after: list, joined: int) -> int:
    """The group's epoch when the batch that first brought the event arrived."""
    number = first_batch[outer_id]
    return epochs_after[number - 1] if number else joined


def _assert_window_forbade(outer_id: str, epoch: int | None, first_batch: dict, epochs_after: list, joined: int):
    """The event came in a batch after which ... its epoch was already more than the window behind."""
    group_epoch_when_it_came = _group_epoch_when_it_came(outer_id, first_batch, epochs_after, joined)
    assert epoch is not None and group_epoch_when_it_came - epoch > PAST_EPOCHS, (
        f"{outer_id[:12]} of epoch {epoch} came when the group was at {group_epoch_when_it_came}: "
        f"within the window of {PAST_EPOCHS}, it had to be read"
    )


def check_commit_verdicts(tmp_path, core_settings, config: dict, delivery: dict) -> None:
    """MIP-03 judges an epoch's race by the race, ``(created_at, id)``: every commit whose epoch was inside the
    windows when it first arrived ends as in time order — applied, ``commit_lost_race``, ``epoch_expired`` or
    anything else —, for the same stream delivered in batches and paged newest first, whatever the batching."""
    sim = _sim(**config)
    gid = sim.expected["group"]
    expected, _ = _reference(str(tmp_path / "time.db"), core_settings, sim)
    reference = _commit_verdicts(expected)
    lines = simulate.arrange(sim.lines, delivery["order"], random.Random(delivery["rng"]), page=delivery["page"])
    by_time = simulate.arrange(sim.lines, "time", random.Random(0))
    page = delivery["page"]
    deliveries = {
        "batches": split(lines, delivery["batches"]),
        "pages": [by_time[i : i + page] for i in range(0, len(by_time), page)][::-1],
    }
    for name, batches in deliveries.items():
        app, epochs_after = _run_noting_epochs(str(tmp_path / f"{name}.db"), core_settings, sim, batches, delivery)
        try:
            got = outcome(app, gid)
            verdicts, first_batch, joined = (
                _commit_verdicts(got),
                _first_batch_of_each_event(batches),
                got["group"][0][4],
            )
            for outer_id, verdict in reference.items():
                came_at = _group_epoch_when_it_came(outer_id.hex(), first_batch, epochs_after, joined)
                if came_at - verdict[0] <= WINDOW:
                    assert verdicts.get(outer_id) == verdict, (
                        f"{name}: commit {outer_id.hex()[:12]} of epoch {verdict[0]} came at epoch {came_at}: "
                        f"{verdicts.get(outer_id)}, in time order {verdict}"
                    )
        finally:
            app.close()


#: The smaller of the two windows, both 5 by default: the past epochs whose keys open an event, and the epochs
#: whose race can still be decided (``TESSERA_MARMOT_SNAPSHOTS``).
WINDOW = min(PAST_EPOCHS, marmot_settings.MarmotSettings().snapshots)


def _commit_verdicts(found: dict) -> dict[bytes, tuple[int, str, str | None]]:
    """Each commit's outer event: its epoch, state and reason."""
    return {row[0]: (row[4], row[2], row[7]) for row in found["outer"] if row[3] == "commit"}


_HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@examples(max_examples=4, deadline=None, suppress_health_check=_HEALTH)
@given(config=DEEP, delivery=ONE_DELIVERY)
def test_one_delivery_in_any_order_ends_where_time_order_ends(tmp_path_factory, settings, config, delivery):
    check_one_delivery(tmp_path_factory.mktemp("deep"), settings, config, delivery)


#: Found by test_pages_ticked_newest_first_many_examples, in its time-ordered reference: a rollback woke the events
#: waiting for the next epoch; one re-blocked, the commit behind it brought that epoch, and the drain went on through
#: six more commits before it came back to the message (epoch_expired), until a drain gave way to its own reason.
MESSAGE_PASSED_BY_ITS_OWN_DRAIN = {
    "config": {
        "members": 3,
        "messages": 30,
        "commits": 11,
        "races": 3,
        "garbage": 0,
        "duplicates": 0,
        "deletions": 2,
        "seed": 50618,
    },
    "page": 3,
    "crashes": [],
}


@examples(max_examples=3, deadline=None, suppress_health_check=_HEALTH)
@given(config=DEEP, page=st.integers(3, 20), crashes=st.lists(st.integers(1, 60), max_size=2))
@example(**MESSAGE_PASSED_BY_ITS_OWN_DRAIN)
def test_pages_ticked_newest_first_lose_only_what_the_window_forbids(tmp_path_factory, settings, config, page, crashes):
    check_pages_newest_first(tmp_path_factory.mktemp("pages"), settings, config, page, crashes)


#: Found by test_batches_many_examples: the loser of epoch 2's same-second race came in the first batch, waited
#: for its epoch, then behind the second batch (core.arrivals) while its winner and five more commits were applied
#: (the group went from 2 to 8): epoch 2 had left the rollback window of 5, and it ended epoch_expired, not
#: commit_lost_race.  Now the winner's application releases the commits held for its epoch, and the loser is
#: weighed right after it.
RACE_LOSER_HELD_BEHIND_A_BATCH = {
    "config": {
        "members": 4,
        "messages": 30,
        "commits": 11,
        "races": 4,
        "garbage": 0,
        "duplicates": 0,
        "deletions": 2,
        "seed": 4,
    },
    "delivery": {"order": "shuffled", "page": 3, "batches": 2, "crashes": [], "rng": 0},
}


@examples(max_examples=4, deadline=None, suppress_health_check=_HEALTH)
@given(config=DEEP, delivery=BATCHES)
@example(**RACE_LOSER_HELD_BEHIND_A_BATCH)
def test_batches_differ_from_time_order_only_where_the_window_forbade(tmp_path_factory, settings, config, delivery):
    check_batches(tmp_path_factory.mktemp("batches"), settings, config, delivery)


@pytest.mark.slow
@examples(max_examples=150, deadline=None, suppress_health_check=_HEALTH)
@given(config=DEEP, delivery=ONE_DELIVERY)
def test_one_delivery_in_any_order_many_examples(tmp_path_factory, settings, config, delivery):
    check_one_delivery(tmp_path_factory.mktemp("deep"), settings, config, delivery)


@pytest.mark.slow
@examples(max_examples=100, deadline=None, suppress_health_check=_HEALTH)
@given(config=DEEP, page=st.integers(3, 20), crashes=st.lists(st.integers(1, 60), max_size=2))
def test_pages_ticked_newest_first_many_examples(tmp_path_factory, settings, config, page, crashes):
    check_pages_newest_first(tmp_path_factory.mktemp("pages"), settings, config, page, crashes)


@pytest.mark.slow
@examples(max_examples=150, deadline=None, suppress_health_check=_HEALTH)
@given(config=DEEP, delivery=BATCHES)
def test_batches_many_examples(tmp_path_factory, settings, config, delivery):
    check_batches(tmp_path_factory.mktemp("batches"), settings, config, delivery)


@examples(max_examples=3, deadline=None, suppress_health_check=_HEALTH)
@given(config=DEEP, delivery=BATCHES)
@example(**RACE_LOSER_HELD_BEHIND_A_BATCH)
def test_every_commit_is_judged_as_in_time_order_however_the_stream_was_batched(
    tmp_path_factory, settings, config, delivery
):
    check_commit_verdicts(tmp_path_factory.mktemp("verdicts"), settings, config, delivery)


@pytest.mark.slow
@examples(max_examples=60, deadline=None, suppress_health_check=_HEALTH)
@given(config=DEEP, delivery=BATCHES)
def test_commit_verdicts_many_examples(tmp_path_factory, settings, config, delivery):
    check_commit_verdicts(tmp_path_factory.mktemp("verdicts"), settings, config, delivery)
