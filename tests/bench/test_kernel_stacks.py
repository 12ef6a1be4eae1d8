"""bench/kernel_stacks.py tells a thread on the CPU from one waiting on a sleep, in a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.bench import run

#: A spinning thread and a main thread asleep; prints both native thread ids once both run.
WATCHED = """
import threading, time
ready = threading.Event()
def spin():
    ready.set()
    end = time.monotonic() + 4
    while time.monotonic() < end:
        pass
worker = threading.Thread(target=spin)
worker.start()
ready.wait()
print(threading.get_native_id(), worker.native_id, flush=True)
time.sleep(4)
"""


def test_a_spinning_thread_is_on_the_cpu_and_a_sleeping_one_idle(tmp_path: Path) -> None:
    watched = subprocess.Popen([sys.executable, "-c", WATCHED], stdout=subprocess.PIPE, text=True)
    try:
        assert watched.stdout is not None
        sleeping, spinning = watched.stdout.readline().split()
        out = tmp_path / "stacks.json"
        done = run("bench/kernel_stacks.py", str(watched.pid), "--seconds", "1", "--json", str(out), timeout=60)
        assert done.returncode == 0, done.stderr
    finally:
        watched.kill()
        watched.wait()
    found = json.loads(out.read_text())
    threads = {str(thread["tid"]): thread for thread in found["threads"]}
    # Without root the stacks cannot be read, and a thread off the CPU is only known to be sleeping.
    asleep = "idle" if found["stacks_readable"] else "sleeping"
    assert threads[spinning]["shares"].get("on the CPU", 0) >= 0.8
    assert threads[sleeping]["shares"].get(asleep, 0) >= 0.8
    assert threads[sleeping]["samples"] >= 20  # every 5 ms for a second, on a loaded machine too
    for thread in threads.values():
        assert abs(sum(thread["shares"].values()) - 1) < 1e-9


def test_a_pid_that_is_not_running_is_refused_in_one_line() -> None:
    done = run("bench/kernel_stacks.py", "999999999", "--seconds", "1", timeout=60)
    assert done.returncode != 0
    assert done.stderr.strip() == "error: no process 999999999; give the PID of a running process"
