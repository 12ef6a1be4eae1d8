"""Stage 3: replay the exported events into projection rows, locally or on Spark.

Both engines run :func:`projectors.arrow.fold` — the same projector code the
daemon runs — and write its rows as Parquet under ``out_dir/__table=<name>/``.

- ``local``: streams the export in seq order into one in-memory database.
  Projectors are partition-local, so global seq order gives every partition
  its events in seq order, with no sort and memory bounded by the projection.
- ``spark``: repartitions by the rebuild key, sorts each Spark partition by
  (partition key, seq) and runs the fold per partition with ``mapInArrow``
  (no Python UDF per row).  Projectors without a rebuild key replay as one
  ordered partition.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.parquet as pq

from projectors.arrow import EVENT_SCHEMA, TABLE_COLUMN, ReplaySpec, fold


def _wanted_filter(spec: ReplaySpec, watermark: int) -> pc.Expression:
    pairs = pc.binary_join_element_wise(pc.field("protocol"), pc.field("event_type"), "/")
    wanted = [f"{protocol}/{event_type}" for protocol, event_type in spec.wanted()]
    return (pc.field("seq") <= watermark) & pc.is_in(pairs, pa.array(wanted, pa.string()))


def count_events(files: Sequence[str], spec: ReplaySpec, watermark: int) -> int:
    """How many exported events the spec's projectors consume."""
    dataset = pds.dataset(list(files), schema=EVENT_SCHEMA, format="parquet")
    return dataset.count_rows(filter=_wanted_filter(spec, watermark))


def replay_local(files: Sequence[str], spec: ReplaySpec, watermark: int, out_dir: Path) -> None:
    _write(fold(_ordered_batches(files, spec, watermark), spec), spec, out_dir)


def _ordered_batches(files: Sequence[str], spec: ReplaySpec, watermark: int) -> Iterator[pa.RecordBatch]:
    """Stream the export in seq order: files are named by seq range, each file is seq-sorted."""
    wanted = _wanted_filter(spec, watermark)
    for path in sorted(files):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=20_000):
            kept = pa.Table.from_batches([batch]).filter(wanted)
            yield from kept.to_batches()


def _write(batches: Iterator[pa.RecordBatch], spec: ReplaySpec, out_dir: Path) -> None:
    pds.write_dataset(batches, out_dir, schema=spec.schema, format="parquet", partitioning=[TABLE_COLUMN],
                      partitioning_flavor="hive", existing_data_behavior="delete_matching")


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


def read_rows(out_dir: Path, table: str) -> pa.Table | None:
    """The replayed rows of ``table`` (None when the replay produced none)."""
    folder = out_dir / f"{TABLE_COLUMN}={table}"
    if not folder.exists():
        return None
    return pds.dataset(str(folder), format="parquet").to_table()
