"""``/metrics`` of a daemon: a real ``tessera tick --metrics-port`` scraped over HTTP, and the exporter's families."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from core.errors import InvalidInput
from core.metrics import counter_families, serve_metrics
from core.settings import Settings


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def tessera(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jobs", *args], capture_output=True, text=True, **kwargs)


def scrape(port: int, timeout_s: float = 20.0) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
                return answer.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_a_running_daemon_serves_its_queues_and_counters(tmp_path):
    db = str(tmp_path / "m.db")
    assert tessera("--db", db, "init").returncode == 0
    junk = tmp_path / "junk.txt"
    junk.write_text("not an example item\n" * 3)
    assert tessera("--db", db, "ingest", "--protocol", "example", str(junk)).returncode == 0
    port = free_port()
    daemon = subprocess.Popen(
        [sys.executable, "-m", "jobs", "--db", db, "tick", "--metrics-port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while 'tessera_queue_items{queue="parked"} 3.0' not in (text := scrape(port)):
            assert time.monotonic() < deadline, text
            time.sleep(0.2)
        assert 'tessera_queue_items{queue="incoming"} 0.0' in text
        assert 'tessera_items_total{outcome="parked"} 3.0' in text
        assert "tessera_head_seq" in text
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=20)
    assert daemon.returncode == 0


def test_drops_are_counted_by_protocol_and_reason():
    counters = {"items_dropped": 7, "dropped.marmot.undecryptable": 5, "dropped.marmot.wait_budget": 2, "statements": 9}
    families = {family.name: family for family in counter_families(counters)}
    dropped = {tuple(sample.labels.values()): sample.value for sample in families["tessera_dropped"].samples}
    assert dropped == {("marmot", "undecryptable"): 5, ("marmot", "wait_budget"): 2}
    items = {sample.labels["outcome"]: sample.value for sample in families["tessera_items"].samples}
    assert items == {"dropped": 7}
    assert [s.labels["name"] for s in families["tessera_counter"].samples] == ["statements"]


def test_a_port_in_use_is_refused_with_what_to_do(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(InvalidInput, match="choose another --metrics-port"):
            serve_metrics(Settings(db=str(tmp_path / "x.db")), port)


def test_the_cli_says_one_line_when_the_port_is_taken(tmp_path):
    db = str(tmp_path / "m.db")
    assert tessera("--db", db, "init").returncode == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = tessera("--db", db, "tick", "--until-idle", "--metrics-port", str(taken.getsockname()[1]))
    assert result.returncode == 1
    assert "choose another --metrics-port" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
