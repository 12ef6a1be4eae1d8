"""Creating the SparkSession: local[*] by default, any master URL unchanged, and quiet.

Spark's JVM logs through its own log4j profile unless told otherwise: a
banner, a warning that the hostname resolves to a loopback address, and one
about the native Hadoop library, none of which a rebuild's user can act on.
The session gets :data:`LOG4J2_CONFIG` (errors only), and a local master
binds to the loopback address outright.  One line is left that no setting
reaches: Spark 4's launcher always starts the JVM with
``--add-modules=jdk.incubator.vector``, and the JVM then prints "WARNING:
Using incubator modules" on stderr.  So the JVM is started here with its
stderr through a pipe, and every line but that one is passed on to ours.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

from core.errors import ProjectionError

LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")
#: Below this many events, ``--engine local`` replays faster than Spark starts.
SMALL_LOG_EVENTS = 200_000
NO_SPARK_HINT = "rebuild without Spark with --engine local"
APP_NAME = "tessera-rebuild"
# What the JVM says once the launcher has added the incubating vector module, which no Spark setting prevents.
_INCUBATOR_WARNING = b"WARNING: Using incubator modules:"

DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
    "spark.driver.memory": "2g",
    # Read by the launcher as it starts the driver's JVM, so it applies from the JVM's first log line on.
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}",
}


def require_java() -> str:
    """The ``java`` Spark will start (JAVA_HOME's, else the one on PATH); ProjectionError when there is none."""
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if candidate is None or not os.access(candidate, os.X_OK):
        where = f"JAVA_HOME={home} has no bin/java" if home else "no `java` is on PATH and JAVA_HOME is not set"
        raise ProjectionError(f"Spark needs Java 17 or later, but {where}; install a JDK, or {NO_SPARK_HINT}")
    return candidate


def engine_hint(events: int, master: str) -> str | None:
    """One line suggesting ``--engine local`` when the log is too small for Spark to pay off, else None.

    Only for a local master: a cluster's user has chosen it for reasons of their own.
    """
    if events >= SMALL_LOG_EVENTS or not master.startswith("local"):
        return None
    return (
        f"hint: {events:,} events is a small log: --engine local replays it in seconds, "
        "without waiting for Spark to start"
    )


def _bind_to_loopback(master: str) -> None:
    """A local master's driver and executors talk only to each other: bind them to 127.0.0.1.

    Without it Spark warns when the hostname resolves to a loopback address.
    A cluster master needs an address its executors can reach, so it is left alone,
    and so is anything the user set.
    """
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("SPARK_LOCAL_HOSTNAME", "localhost")


def make_session(master: str, conf: dict[str, str], partitions: int | None = None) -> Any:
    """A SparkSession for rebuilds; ``conf`` entries override the defaults."""
    require_java()
    _bind_to_loopback(master)
    # Workers must run this interpreter (with tessera and its plugins importable).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(APP_NAME)
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
        _start_jvm_quietly({"spark.master": master, "spark.app.name": APP_NAME, **settings})
        session = builder.getOrCreate()
        session.conf.get("spark.sql.shuffle.partitions")  # Spark checks SQL settings at their first use
    except PySparkException as exc:  # a --conf value or a master Spark refuses: its JVM said why above
        if session is not None:
            session.stop()
        reason = " ".join(str(exc).split())[:500]
        raise ProjectionError(
            f"Spark did not start a session on {master} ({reason}); check --master and --conf "
            f"(Spark's own messages above say more), or {NO_SPARK_HINT}"
        ) from None
    session.sparkContext.setLogLevel("ERROR")
    return session


def _start_jvm_quietly(settings: dict[str, str]) -> None:
    """Start Spark's JVM (as the session would, with ``settings``) with its stderr passed on through a filter.

    Nothing to do when this process has a JVM already (an earlier session, or a caller's).
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    read_end, write_end = os.pipe()
    # Reading starts first, so what a JVM that fails to start says still reaches the user.
    threading.Thread(target=_pass_on_stderr, args=(read_end,), name="spark-jvm-stderr", daemon=True).start()
    try:
        conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
        gateway = launch_gateway(conf, {"stderr": write_end})  # type: ignore[no-untyped-call]
    finally:
        os.close(write_end)  # the JVM holds its own copy; the reader sees the end when the JVM exits
    SparkContext._ensure_initialized(gateway=gateway)


def _pass_on_stderr(read_end: int) -> None:
    with os.fdopen(read_end, "rb") as jvm_stderr:
        for line in jvm_stderr:
            if not line.startswith(_INCUBATOR_WARNING):
                sys.stderr.write(line.decode(errors="replace"))
                sys.stderr.flush()


def spark_available() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return True
