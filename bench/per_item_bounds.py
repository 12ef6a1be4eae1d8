"""How far each remaining cut could take the per-item path: process_incoming with one part of the core's work
taken out, beside the path as it is and its ceiling.

    python bench/per_item_bounds.py [--items N] [--rounds N]

The tick benchmark's first figure is process_incoming one item a transaction against the raw apsw loop plus
decoding (target 80%).  Each way below runs the same path with one part removed by patching it out: what is
left is *not* a correct program (counters go unwritten, input goes unchecked), and it is never shipped; it
measures the most that part could give back if it cost nothing at all.  The parts are the candidates the
profile names (``bench/per_item_profile.py``):

- **hook**: the statement hook (``Database._profile``: counters, slow statements, what the known-answers cache
  must forget) not installed;
- **tally**: the item's outcome counter not written (one upsert of ``kv`` and its page at each COMMIT);
- **claim**: the item claimed by ``DELETE ... RETURNING`` instead of a read now and a delete after it (one
  statement fewer);
- **checks**: the event payload's canonical-JSON checks skipped when the core encodes an event (the encoding
  still runs; the example protocol's own use of the encoder, to name a message, is decoding's, which the
  ceiling pays too, and keeps its checks);
- **validators**: the records' field validators (attrs) off;
- **all**: all five at once.

``--rounds`` rounds run every way in turn on fresh files, so a drift of the machine's speed touches all of
them alike; the table gives each way's median and range, its share of the ceiling measured in the same rounds,
and what it saves against the path as it is.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import attrs
import tick
from common import Workdir, console, parser, report

from core import drain, encoding, pipeline, queues, records
from core.app import App
from core.db import Database
from core.records import ItemSource

OPTIONS = (
    ("--items", 10_000, "items per way and round"),
    ("--rounds", 5, "rounds, every way in turn within each"),
)

_CLAIM = "DELETE FROM incoming WHERE id = (SELECT min(id) FROM incoming) RETURNING id, protocol, blob"


def _claiming_oldest(db: Database) -> queues.WorkItem | None:
    row = db.one(_CLAIM)
    if row is None:
        return None
    return queues.WorkItem(protocol=row[1], blob=row[2], source=ItemSource.INCOMING, source_id=row[0])


def _nothing(*_: object) -> None:
    return None


class _UncheckedEncoding:
    """:mod:`core.encoding` as :mod:`core.records` uses it, with the payload's checks left out."""

    loads = staticmethod(encoding.loads)

    @staticmethod
    def dumps(value: object) -> bytes:
        return encoding._encoder.encode(value).encode("utf-8")


@contextlib.contextmanager
def _statement_hook_removed(app: App) -> Iterator[None]:
    app.db.conn.set_profile(None)
    try:
        yield
    finally:
        app.db.conn.set_profile(app.db._profile)


Cut = Callable[[App], contextlib.AbstractContextManager[Any]]

# Each way: what it takes out of the app while its items run.
_CUTS: dict[str, tuple[Cut, ...]] = {
    "hook": (_statement_hook_removed,),
    "tally": (lambda _app: mock.patch.object(pipeline, "count_outcome", _nothing),),
    "claim": (
        lambda _app: mock.patch.object(queues, "oldest_incoming", _claiming_oldest),
        lambda _app: mock.patch.object(queues, "delete_incoming", _nothing),
    ),
    "checks": (lambda _app: mock.patch.object(records, "encoding", _UncheckedEncoding),),
    "validators": (lambda _app: attrs.validators.disabled(),),
}
WAYS = ("as it is", *_CUTS, "all")


def _cuts_of(way: str) -> list[Cut]:
    if way == "as it is":
        return []
    if way == "all":
        return [cut for cuts in _CUTS.values() for cut in cuts]
    return list(_CUTS[way])


def run_way(work: Workdir, blobs: list[bytes], way: str) -> float:
    """One way on a fresh file: µs an item, wall time, the items' loop alone."""
    app: App = tick.open_example(work.db(way.replace(" ", "-")))
    tick.queue(app, blobs)
    with contextlib.ExitStack() as stack:
        for cut in _cuts_of(way):
            stack.enter_context(cut(app))
        started = time.perf_counter()
        done = 0
        while drain.process_next_incoming(app.runtime) is not None:
            done += 1
        elapsed = time.perf_counter() - started
    app.close()
    if done != len(blobs):
        raise RuntimeError(f"{way}: {done} of {len(blobs)} items handled")
    return elapsed / done * 1e6


def ceiling_us(work: Workdir, blobs: list[bytes]) -> float:
    """The tick benchmark's ceiling for one item: the raw apsw loop's time plus decoding's, in µs."""
    raw_n, raw_s = tick.raw(work.db("raw"), blobs)
    started = time.perf_counter()
    tick.decode_all(blobs)
    return (raw_s / raw_n + (time.perf_counter() - started) / len(blobs)) * 1e6


def main() -> None:
    args = parser(__doc__, *OPTIONS).parse_args()
    timings: dict[str, list[float]] = {way: [] for way in WAYS}
    ceilings: list[float] = []
    with Workdir(args.keep) as work:
        console.print(f"signing {args.items:,} example messages ...")
        blobs = tick.messages(args.items)
        for round_no in range(args.rounds):
            ceilings.append(ceiling_us(work, blobs))
            for way in WAYS:
                timings[way].append(run_way(work, blobs, way))
            console.print(f"round {round_no + 1} of {args.rounds} done")
    ceiling = statistics.median(ceilings)
    as_it_is = statistics.median(timings["as it is"])
    rows = [
        (
            way,
            f"{statistics.median(found):.1f}",
            f"{min(found):.1f}–{max(found):.1f}",
            f"{ceiling / statistics.median(found):.1%}",
            f"{as_it_is - statistics.median(found):+.1f}" if way != "as it is" else "",
        )
        for way, found in timings.items()
    ]
    rows.append(("ceiling: raw loop + decoding", f"{ceiling:.1f}", f"{min(ceilings):.1f}–{max(ceilings):.1f}", "", ""))
    report(
        f"process_incoming, one item a transaction, {args.items:,} items, {args.rounds} rounds (target: 80% of the "
        f"ceiling, {ceiling / 0.8:.1f} µs an item)",
        rows,
        ("way", "µs an item (median)", "range", "of the ceiling", "saved, µs"),
    )


if __name__ == "__main__":
    main()
