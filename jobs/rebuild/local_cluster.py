"""A Spark standalone cluster on this machine: a master and workers started from the pyspark installation's
own classes, for trying ``tessera rebuild --master spark://...`` and for measuring rebuilds per executor
count (bench/rebuild.py).  Everything listens on 127.0.0.1 and stops with the context manager.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO

from core.errors import ProjectionError


def spark_class() -> str:
    """The ``spark-class`` launcher of the installed pyspark."""
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, timeout_s: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise ProjectionError(f"the Spark {what} did not listen on 127.0.0.1:{port} within {timeout_s:.0f} s; see {log}")


class LocalCluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each, their logs and work files in
    ``folder``.  ``url`` is the master's ``spark://`` address once entered.  A worker may offer more cores than
    the machine has (Spark does not check): executors then share the real ones."""

    def __init__(
        self, folder: Path, *, workers: int = 1, cores: int = 2, memory: str = "1g", start_timeout_s: float = 90
    ):
        self.folder = folder
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.start_timeout_s = start_timeout_s
        self.url = ""
        self._procs: list[subprocess.Popen[bytes]] = []
        self._log: IO[str] | None = None

    @property
    def log_path(self) -> Path:
        return self.folder / "cluster.log"

    def _start(self, *args: str) -> None:
        env = dict(
            os.environ,
            SPARK_LOCAL_IP="127.0.0.1",
            PYSPARK_PYTHON=sys.executable,
            SPARK_WORKER_DIR=str(self.folder / "workers"),
        )
        assert self._log is not None
        self._procs.append(
            subprocess.Popen([spark_class(), *args], env=env, stdout=self._log, stderr=subprocess.STDOUT)
        )

    def __enter__(self) -> LocalCluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "w")
        try:
            port = free_port()
            master = ("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port))
            self._start(*master, "--webui-port", str(free_port()))
            _wait_for_port(port, self.start_timeout_s, "master", self.log_path)
            self.url = f"spark://127.0.0.1:{port}"
            for _ in range(self.workers):
                worker_port = free_port()
                self._start(
                    "org.apache.spark.deploy.worker.Worker",
                    self.url,
                    *("--cores", str(self.cores), "--memory", self.memory, "--host", "127.0.0.1"),
                    *("--port", str(worker_port), "--webui-port", str(free_port())),
                )
                _wait_for_port(worker_port, self.start_timeout_s, "worker", self.log_path)
            self._wait_for_registration()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_for_registration(self) -> None:
        """Until the master's log says every worker registered (a session started earlier gets no executor)."""
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.log_path.read_text(errors="replace").count("Registering worker") >= self.workers:
                return
            time.sleep(0.2)
        raise ProjectionError(f"Spark workers did not register with {self.url}; see {self.log_path}")

    def session_conf(self, executors: int, executor_memory: str = "768m") -> dict[str, str]:
        """SparkSession settings for ``executors`` one-core executors on this cluster."""
        return {
            "spark.driver.host": "127.0.0.1",
            "spark.executor.cores": "1",
            "spark.cores.max": str(executors),
            "spark.executor.memory": executor_memory,
        }

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for proc in reversed(self._procs):
            proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
        if self._log is not None:
            self._log.close()
            self._log = None
