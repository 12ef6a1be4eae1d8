"""Stage 3: replay the exported events into projection rows, locally or on Spark.

Both engines run the same projector code the daemon runs (:mod:`projectors.arrow`)
on the same buckets, with the same function (:func:`replay_bucket`), and write
the rows as Parquet under ``out_dir/__table=<name>/part-<bucket>.parquet``.

The events are hashed by rebuild key into buckets, and every bucket's events
are spilled in seq order to its own Parquet runs (:func:`split_into_buckets`).
A bucket is folded into a fresh in-memory database and its tables streamed
out, so memory is bounded by one bucket's projection, not by the whole log.
Projectors without a rebuild key replay as one bucket, read from the export.

- ``local``: this process folds the buckets one after another.
- ``spark``: the driver spills, and Spark runs one task per bucket
  (``parallelize`` + ``map``); only the events folded come back.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import sys
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.parquet as pq

from core.errors import ProjectionError, TesseraError
from projectors.arrow import (
    EVENT_SCHEMA,
    TABLE_COLUMN,
    ReplaySpec,
    TableShape,
    out_field,
    replay_into,
    table_batches,
)

log = logging.getLogger("tessera.rebuild")

READ_BATCH_ROWS = 20_000
SPILL_RUN_ROWS = 50_000
SPILL_HELD_ROWS = 400_000
# Each replayed file read while the load merges them streams through a buffer this big,
# instead of holding its whole row group's compressed bytes.
MERGE_READ_BUFFER = 1 << 20


def _wanted_filter(spec: ReplaySpec, watermark: int) -> pc.Expression:
    pairs = pc.binary_join_element_wise(pc.field("protocol"), pc.field("event_type"), "/")
    wanted = [f"{protocol}/{event_type}" for protocol, event_type in spec.wanted()]
    return (pc.field("seq") <= watermark) & pc.is_in(pairs, pa.array(wanted, pa.string()))


def count_events(files: Sequence[str], spec: ReplaySpec, watermark: int) -> int:
    """How many exported events the spec's projectors consume."""
    dataset = pds.dataset(list(files), schema=EVENT_SCHEMA, format="parquet")
    return int(dataset.count_rows(filter=_wanted_filter(spec, watermark)))


@attrs.frozen
class ReplayGroup:
    """One replay of the projectors that share a rebuild key, as either engine runs it.

    Attributes:
        files: the exported Parquet files of the event log.
        spec: the projectors, their tables and the upcasters.
        rebuild_key: ``partition_key``, or None to replay everything as one ordered partition.
        watermark: the last seq replayed (later events are left to the catch-up).
        events: how many exported events these projectors consume (see :func:`count_events`).
        out_dir: where the replayed rows go, as Parquet under ``__table=<name>/``.
    """

    files: tuple[str, ...]
    spec: ReplaySpec
    rebuild_key: str | None
    watermark: int
    events: int
    out_dir: Path


@attrs.frozen
class Bucket:
    """One bucket of a replay group: what one fold replays, in the local engine's loop or as one Spark task.

    Attributes:
        index: its number, which names its output files (``part-<index>.parquet``).
        runs: the Parquet runs holding its events in seq order (spilled, so already filtered); None for a
            group replayed as one bucket, which reads the export itself.
    """

    index: int
    runs: tuple[str, ...] | None


def spill_folder(group: ReplayGroup) -> Path:
    """Where the group's buckets are spilled: beside its replay output, in the work directory."""
    return group.out_dir.with_name(group.out_dir.name + ".buckets")


def split_into_buckets(group: ReplayGroup, buckets: int) -> list[Bucket]:
    """The group's events hashed by rebuild key into ``buckets`` buckets, spilled under :func:`spill_folder`.

    Only the buckets that hold events are returned.  A group without a rebuild key, or asked for one
    bucket, is one bucket that reads the export in seq order: nothing is spilled.
    """
    if group.rebuild_key is None or buckets == 1:
        return [Bucket(0, None)]
    log.info("replay of %d events in %d buckets: spilling", group.events, buckets)
    spill = _Spill(spill_folder(group), buckets)
    for batch in _ordered_batches(group):
        spill.add(batch)
    spill.finish()
    return [Bucket(index, spill.runs_of(index)) for index in range(buckets) if spill.runs[index]]


def replay_bucket(group: ReplayGroup, bucket: Bucket, advance: Callable[[int], None] = lambda n: None) -> int:
    """Fold one bucket and write each table's rows to ``out_dir/__table=<name>/part-<index>.parquet``.

    Both engines run this: the local engine bucket after bucket, Spark as one task per bucket.
    ``advance`` counts events folded; returns how many were.
    """
    if bucket.runs is None:
        batches = _ordered_batches(group)
    else:
        batches = (
            batch for run in bucket.runs for batch in pq.ParquetFile(run).iter_batches(batch_size=READ_BATCH_ROWS)
        )
    folded = 0

    def counted() -> Iterator[pa.RecordBatch]:
        nonlocal folded
        for batch in batches:
            yield batch
            folded += batch.num_rows
            advance(batch.num_rows)

    _fold_bucket(counted(), group.spec, group.out_dir, bucket.index)
    return folded


def replay_local(group: ReplayGroup, *, partition_events: int, advance: Callable[[int], None] = lambda n: None) -> None:
    """Replay the group's events bucket by bucket in this process; ``advance`` counts events folded."""
    buckets = split_into_buckets(group, max(1, -(-group.events // partition_events)))
    try:
        for number, bucket in enumerate(buckets, 1):
            log.info("local replay: bucket %d of %d", number, len(buckets))
            replay_bucket(group, bucket, advance)
            for run in bucket.runs or ():
                Path(run).unlink(missing_ok=True)  # the spill needs as much disk as the export: free it as it goes
    finally:
        shutil.rmtree(spill_folder(group), ignore_errors=True)


def replay_spark(spark: Any, group: ReplayGroup, partitions: int) -> int:
    """Replay the group on Spark: the driver spills ``partitions`` buckets as the local engine does, and Spark runs
    one task per bucket, each folding its bucket with :func:`replay_bucket` and writing its tables' Parquet itself.

    No DataFrame: the JVM neither scans, shuffles, sorts nor converts a row, so beyond the spill the replay's
    CPU is the Python workers' folding.  Executors read the spill and write the output at the driver's paths,
    so the work directory must be one they all see (docs/operations.md).  Returns the events folded.
    """
    from pyspark.errors import PythonException

    warming = _start_python_workers(spark, group)
    buckets = split_into_buckets(group, partitions)
    warming.join()
    if not buckets:  # none of the exported events is one these projectors consume
        return 0
    try:
        tasks = spark.sparkContext.parallelize(buckets, len(buckets))
        return sum(tasks.map(lambda bucket: replay_bucket(group, bucket)).collect())
    except PythonException as exc:
        typed = worker_error(str(exc))
        if typed is None:
            raise
        raise typed from None
    finally:
        shutil.rmtree(spill_folder(group), ignore_errors=True)


def _start_python_workers(spark: Any, group: ReplayGroup) -> threading.Thread:
    """Have every executor core start its Python worker and import the projectors while the driver spills.

    A Spark application's first tasks wait seconds for their Python workers to start and import the
    projector code (about 4 s on two busy cores: docs/benchmarks.md), and Spark keeps a worker, with what
    it imported, for the tasks that follow.  Started now, that wait overlaps the spill, which uses one core.
    """
    slots = spark.sparkContext.defaultParallelism

    def import_the_projectors() -> None:
        # Nothing to report from here: whatever fails again fails in the replay's own job, where it is typed.
        with contextlib.suppress(Exception):
            spark.sparkContext.parallelize(range(slots), slots).map(lambda _: len(group.spec.projectors)).collect()

    thread = threading.Thread(target=import_the_projectors, name="spark-python-workers", daemon=True)
    thread.start()
    return thread


def _ordered_batches(group: ReplayGroup) -> Iterator[pa.RecordBatch]:
    """Stream the export in seq order: files are named by seq range, each file is seq-sorted."""
    wanted = _wanted_filter(group.spec, group.watermark)
    for path in sorted(group.files):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=READ_BATCH_ROWS):
            kept = pa.Table.from_batches([batch]).filter(wanted)
            yield from kept.to_batches()


def bucket_of(keys: pa.Array, buckets: int) -> pa.Array:
    """Each partition key's bucket: CRC-32 of its UTF-8 bytes modulo ``buckets`` (stable across runs).

    A missing key counts as the empty key.
    """
    encoded = pc.dictionary_encode(keys.fill_null(""))
    per_key = [zlib.crc32(key.encode()) % buckets for key in encoded.dictionary.to_pylist()]
    return pa.array(per_key, pa.int32()).take(encoded.indices)


class _Spill:
    """Each bucket's events, in seq order, as numbered Parquet runs on disk.

    No file stays open (a log can have thousands of buckets), and at most
    ``SPILL_HELD_ROWS`` events wait in memory across all buckets.
    """

    def __init__(self, folder: Path, buckets: int):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        self.folder = folder
        self.pending: list[list[pa.RecordBatch]] = [[] for _ in range(buckets)]
        self.rows = [0] * buckets
        self.runs = [0] * buckets
        self.held = 0

    def add(self, batch: pa.RecordBatch) -> None:
        ids = bucket_of(batch.column("partition_key"), len(self.pending))
        for index in pc.unique(ids).to_pylist():
            part = batch.filter(pc.equal(ids, index))
            self.pending[index].append(part)
            self.rows[index] += part.num_rows
            self.held += part.num_rows
            if self.rows[index] >= SPILL_RUN_ROWS:
                self._flush(index)
        if self.held >= SPILL_HELD_ROWS:
            self.finish()

    def finish(self) -> None:
        """Write every bucket's waiting events."""
        for index, rows in enumerate(self.rows):
            if rows:
                self._flush(index)

    def _flush(self, index: int) -> None:
        pq.write_table(pa.Table.from_batches(self.pending[index], EVENT_SCHEMA), self._path(index, self.runs[index]))
        self.runs[index] += 1
        self.held -= self.rows[index]
        self.pending[index], self.rows[index] = [], 0

    def _path(self, index: int, run: int) -> Path:
        return self.folder / f"bucket-{index:05d}-run-{run:06d}.parquet"

    def runs_of(self, index: int) -> tuple[str, ...]:
        """The bucket's runs in the order written, which is seq order."""
        return tuple(str(self._path(index, run)) for run in range(self.runs[index]))


def _fold_bucket(batches: Iterable[pa.RecordBatch], spec: ReplaySpec, out_dir: Path, index: int) -> None:
    """Replay one bucket into memory, then stream each table into its own Parquet file."""
    conn = replay_into(batches, spec)
    try:
        for shape in spec.shapes:
            writer = None
            try:
                for batch in table_batches(conn, shape):
                    if writer is None:
                        folder = out_dir / f"{TABLE_COLUMN}={shape.name}"
                        folder.mkdir(parents=True, exist_ok=True)
                        writer = pq.ParquetWriter(folder / f"part-{index:05d}.parquet", batch.schema)
                    writer.write_batch(batch)
            finally:
                if writer is not None:
                    writer.close()
    finally:
        conn.close()


# The last line of the worker's traceback, as Spark hands it back: "package.module.ErrorClass: message".
_TRACEBACK_LAST_LINE = re.compile(
    r"^(?P<module>[A-Za-z_][\w.]*)\.(?P<name>[A-Za-z_]\w*): (?P<message>.+)$", re.MULTILINE
)


def worker_error(text: str) -> TesseraError | None:
    """The Tessera error a Spark Python worker raised, rebuilt from the traceback text Spark wraps it in.

    A user's error (a damaged event, a mistyped column) then reads as it does
    with the local engine instead of as pages of Spark's Python traceback.
    """
    for match in reversed(list(_TRACEBACK_LAST_LINE.finditer(text))):
        module = sys.modules.get(match["module"])
        error = getattr(module, match["name"], None) if module is not None else None
        if isinstance(error, type) and issubclass(error, TesseraError):
            try:
                return error(match["message"])
            except TypeError:  # an error class that needs more than a message
                return ProjectionError(match["message"])
    return None


def replayed_batches(out_dir: Path, shape: TableShape) -> Iterator[pa.Table]:
    """The replayed rows of one table, streamed in the order of its key (nothing when the replay produced none).

    Each replay partition's file holds its rows in key order (a fold dumps a
    table in its b-tree's order), but the partitions interleave: loaded file
    after file, every file's rows land all over the shadow table's b-tree and
    its pages are split and read back again for each file, which at 10M rows
    no page cache holds.  Merged by key, each insert lands at the b-tree's
    right edge.  A table whose rowid is hidden (no such key) loads file by file.
    """
    # File by file, with no read-ahead: the loader is SQLite-bound, and a
    # dataset scan's read-ahead would hold gigabytes of decoded rows at 10M.
    runs = [_file_rows(path, shape) for path in sorted((out_dir / f"{TABLE_COLUMN}={shape.name}").glob("*.parquet"))]
    if not shape.key or len(runs) < 2:
        for run in runs:
            yield from run
        return
    yield from merged_by_key(runs, [out_field(shape.name, column) for column in shape.key])


def _file_rows(path: Path, shape: TableShape) -> Iterator[pa.Table]:
    """A replayed file's rows (written by :func:`replay_bucket`, columns as ``arrow.table_schema`` names them)."""
    reader = pq.ParquetFile(path, buffer_size=MERGE_READ_BUFFER)
    for batch in reader.iter_batches(batch_size=READ_BATCH_ROWS):
        yield pa.Table.from_batches([batch])


class _Run:
    """One sorted run of a merge: the rows read from it and not yet merged, and whether it has more."""

    def __init__(self, tables: Iterator[pa.Table]):
        self._tables = tables
        self.held: pa.Table | None = None
        self.exhausted = False

    def read_more(self) -> None:
        more = next(self._tables, None)
        if more is None:
            self.exhausted = True
        else:
            self.held = more if self.held is None else pa.concat_tables([self.held, more])

    @property
    def empty(self) -> bool:
        return self.held is None or self.held.num_rows == 0

    def last(self, column: str) -> Any:
        """The last value of ``column`` among the rows held (there must be some)."""
        assert self.held is not None
        return self.held.column(column)[-1]

    def take_upto(self, column: str, bound: Any) -> pa.Table:
        """Remove and return the rows held whose ``column`` is at most ``bound`` (all of them when None)."""
        assert self.held is not None
        held, self.held = self.held, None
        if bound is None:
            return held
        upto = pc.less_equal(held.column(column), bound)
        self.held = held.filter(pc.invert(upto))
        return held.filter(upto)


def merged_by_key(runs: Sequence[Iterator[pa.Table]], key: Sequence[str]) -> Iterator[pa.Table]:
    """Tables from ``runs``, each sorted by ``key``, merged into one stream in that order.

    Every round takes, from each run, the rows up to the smallest last key any
    unfinished run holds: no row still unread can sort before them.  The
    merge is by the first key column, each round's rows sorted by all of
    them.  Order only makes the load faster; every row is yielded exactly once
    whatever order the runs hold.
    """
    first = key[0]
    sort_keys = [(column, "ascending") for column in key]
    pending = [_Run(run) for run in runs]
    while True:
        for run in pending:
            while run.empty and not run.exhausted:
                run.read_more()
        open_runs = [run for run in pending if not run.exhausted]
        bounding = min(open_runs, key=lambda run: run.last(first).as_py(), default=None)
        bound = None if bounding is None else bounding.last(first)
        taken = [run.take_upto(first, bound) for run in pending if not run.empty]
        merged = pa.concat_tables(taken) if taken else None
        if merged is not None and merged.num_rows:
            yield merged.take(pc.sort_indices(merged, sort_keys=sort_keys))
        if bounding is None:
            return
        if not bounding.empty:  # rows out of order in that run: read on, so every round moves
            bounding.read_more()
