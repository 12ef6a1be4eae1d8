"""Creating the SparkSession: local[*] by default, any master URL unchanged."""

from __future__ import annotations

import os
import sys
from typing import Any

from core.errors import ProjectionError

DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
    "spark.driver.memory": "2g",
}


def make_session(master: str, conf: dict[str, str], partitions: int | None = None) -> Any:
    """A SparkSession for rebuilds; ``conf`` entries override the defaults."""
    # Workers must run this interpreter (with tessera and its plugins importable).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("tessera-rebuild")
    settings = {
        **DEFAULT_CONF,
        "spark.sql.shuffle.partitions": str(partitions or 2 * (os.cpu_count() or 2)),
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        **conf,
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = None
    try:
        session = builder.getOrCreate()
        session.conf.get("spark.sql.shuffle.partitions")  # Spark checks SQL settings at their first use
    except PySparkException as exc:  # a --conf value or a master Spark refuses: its JVM said why above
        if session is not None:
            session.stop()
        reason = " ".join(str(exc).split())[:500]
        raise ProjectionError(
            f"Spark did not start a session on {master} ({reason}); check --master and --conf "
            "(Spark's own messages above say more)"
        ) from None
    session.sparkContext.setLogLevel("ERROR")
    return session


def spark_available() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return True
