"""Stage 3: replay the exported events into projection rows, locally or on Spark.

Both engines run the same projector code the daemon runs (:mod:`projectors.arrow`)
and write the rows as Parquet under ``out_dir/__table=<name>/``.

- ``local``: hashes the rebuild key into buckets of about ``bucket_events``
  events each, spills every bucket in seq order to its own Parquet file, then
  replays one bucket at a time into a fresh in-memory database and streams
  its tables out.  Memory is bounded by one bucket's projection, not by the
  whole log.  Projectors without a rebuild key replay as one bucket.
- ``spark``: repartitions by the rebuild key, sorts each Spark partition by
  (partition key, seq) and runs the fold per partition with ``mapInArrow``
  (no Python UDF per row).  Projectors without a rebuild key replay as one
  ordered partition.
"""

from __future__ import annotations

import logging
import shutil
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.parquet as pq

from projectors.arrow import EVENT_SCHEMA, TABLE_COLUMN, ReplaySpec, fold, replay_into, table_batches

log = logging.getLogger("tessera.rebuild")

READ_BATCH_ROWS = 20_000
SPILL_FLUSH_ROWS = 50_000


def _wanted_filter(spec: ReplaySpec, watermark: int) -> pc.Expression:
    pairs = pc.binary_join_element_wise(pc.field("protocol"), pc.field("event_type"), "/")
    wanted = [f"{protocol}/{event_type}" for protocol, event_type in spec.wanted()]
    return (pc.field("seq") <= watermark) & pc.is_in(pairs, pa.array(wanted, pa.string()))


def count_events(files: Sequence[str], spec: ReplaySpec, watermark: int) -> int:
    """How many exported events the spec's projectors consume."""
    dataset = pds.dataset(list(files), schema=EVENT_SCHEMA, format="parquet")
    return dataset.count_rows(filter=_wanted_filter(spec, watermark))


def replay_local(files: Sequence[str], spec: ReplaySpec, rebuild_key: str | None, watermark: int,
                 out_dir: Path, *, events: int, bucket_events: int,
                 advance: Callable[[int], None] = lambda n: None) -> None:
    """Replay ``events`` exported events bucket by bucket; ``advance`` counts events folded."""
    buckets = 1 if rebuild_key is None else max(1, -(-events // bucket_events))
    if buckets == 1:
        _fold_bucket(_counted(_ordered_batches(files, spec, watermark), advance), spec, out_dir, 0)
        return
    spill_dir = out_dir.with_name(out_dir.name + ".buckets")
    shutil.rmtree(spill_dir, ignore_errors=True)
    log.info("local replay of %d events in %d buckets: spilling", events, buckets)
    paths = _spill(_ordered_batches(files, spec, watermark), buckets, spill_dir)
    for index, path in enumerate(paths):
        if path.exists():
            log.info("local replay: bucket %d of %d", index + 1, buckets)
            batches = pq.ParquetFile(path).iter_batches(batch_size=READ_BATCH_ROWS)
            _fold_bucket(_counted(batches, advance), spec, out_dir, index)
            path.unlink()
    shutil.rmtree(spill_dir, ignore_errors=True)


def _ordered_batches(files: Sequence[str], spec: ReplaySpec, watermark: int) -> Iterator[pa.RecordBatch]:
    """Stream the export in seq order: files are named by seq range, each file is seq-sorted."""
    wanted = _wanted_filter(spec, watermark)
    for path in sorted(files):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=READ_BATCH_ROWS):
            kept = pa.Table.from_batches([batch]).filter(wanted)
            yield from kept.to_batches()


def _counted(batches: Iterable[pa.RecordBatch], advance: Callable[[int], None]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        yield batch
        advance(batch.num_rows)


def bucket_of(keys: pa.Array, buckets: int) -> pa.Array:
    """Each partition key's bucket: CRC-32 of its UTF-8 bytes modulo ``buckets`` (stable across runs).

    A missing key counts as the empty key.
    """
    encoded = pc.dictionary_encode(keys.fill_null(""))
    per_key = [zlib.crc32(key.encode()) % buckets for key in encoded.dictionary.to_pylist()]
    return pa.array(per_key, pa.int32()).take(encoded.indices)


def _spill(batches: Iterable[pa.RecordBatch], buckets: int, spill_dir: Path) -> list[Path]:
    """Split the seq-ordered stream into one seq-ordered Parquet file per bucket."""
    spill_dir.mkdir(parents=True)
    paths = [spill_dir / f"bucket-{index:05d}.parquet" for index in range(buckets)]
    writers: dict[int, pq.ParquetWriter] = {}
    pending: dict[int, list[pa.RecordBatch]] = {index: [] for index in range(buckets)}

    def flush(index: int) -> None:
        if index not in writers:
            writers[index] = pq.ParquetWriter(paths[index], EVENT_SCHEMA)
        writers[index].write_table(pa.Table.from_batches(pending[index], EVENT_SCHEMA))
        pending[index] = []

    try:
        for batch in batches:
            ids = bucket_of(batch.column("partition_key"), buckets)
            for index in pc.unique(ids).to_pylist():
                pending[index].append(batch.filter(pc.equal(ids, index)))
                if sum(b.num_rows for b in pending[index]) >= SPILL_FLUSH_ROWS:
                    flush(index)
        for index, held in pending.items():
            if held:
                flush(index)
    finally:
        for writer in writers.values():
            writer.close()
    return paths


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


def replay_spark(spark, files: Sequence[str], spec: ReplaySpec, rebuild_key: str | None, watermark: int,
                 out_dir: Path, partitions: int) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    wanted = [f"{protocol}/{event_type}" for protocol, event_type in spec.wanted()]
    events = (spark.read.parquet(*files)
              .where(F.col("seq") <= watermark)
              .where(F.concat_ws("/", "protocol", "event_type").isin(wanted))
              .select(*EVENT_SCHEMA.names))
    if rebuild_key == "partition_key":
        events = events.repartition(partitions, "partition_key").sortWithinPartitions("partition_key", "seq")
    else:
        events = events.repartition(1).sortWithinPartitions("seq")
    rows = events.mapInArrow(lambda batches: fold(batches, spec), from_arrow_schema(spec.schema))
    rows.write.mode("overwrite").partitionBy(TABLE_COLUMN).parquet(str(out_dir))


def replayed_batches(out_dir: Path, table: str) -> Iterator[pa.RecordBatch]:
    """The replayed rows of ``table``, streamed (nothing when the replay produced none)."""
    folder = out_dir / f"{TABLE_COLUMN}={table}"
    if folder.exists():
        yield from pds.dataset(str(folder), format="parquet").to_batches(batch_size=READ_BATCH_ROWS)
