"""Where a running process's threads wait in the kernel: each thread's state and kernel stack, read every few ms.

    python bench/kernel_stacks.py PID [--every-ms 5] [--seconds N] [--json F]

Runs until the process ends or ``--seconds`` pass, then prints, per thread, the share of samples it spent on the
CPU (or runnable), idle (waiting on a lock, a poll or a sleep: nothing asked of the kernel), and blocked in each
system call (an ``fdatasync`` held by the block layer's write-back throttle, a ``pread64`` waiting for the disk),
with the longest stretch blocked in one call.  This is how the 10M fill's longest holds were traced to the disk
(docs/benchmarks.md, *The checkpoint thread that copied nothing*).  Reading kernel stacks needs root; without them a
thread off the CPU is only "sleeping" or "blocked".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

#: Kernel functions of a thread that waits for something other than the kernel's own work.
IDLE_WAITS = ("futex", "do_select", "poll", "ep_poll", "nanosleep", "pipe_read", "wait_woken", "unix_stream")


class Sampler:
    """Samples of one process's threads: what each was doing, and its longest stretches blocked."""

    def __init__(self, pid: int):
        self.pid = pid
        self.samples: dict[str, Counter[str]] = {}
        self.names: dict[str, str] = {}
        self.longest: dict[str, tuple[float, str]] = {}
        self.stacks_readable = True
        self._since: dict[str, tuple[float, str]] = {}

    def sample(self) -> bool:
        """One sample of every thread; False once the process is gone."""
        try:
            tids = os.listdir(f"/proc/{self.pid}/task")
        except FileNotFoundError:
            return False
        now = time.monotonic()
        for tid in tids:
            what = self._what(tid)
            if what is None:
                continue
            self.samples.setdefault(tid, Counter())[what] += 1
            began, doing = self._since.get(tid, (now, what))
            if doing != what:
                self._ended(tid, doing, now - began)
                began = now
            self._since[tid] = (began, what)
        return True

    def finish(self) -> None:
        now = time.monotonic()
        for tid, (began, doing) in self._since.items():
            self._ended(tid, doing, now - began)

    def _ended(self, tid: str, doing: str, seconds: float) -> None:
        if doing.startswith("blocked") and seconds > self.longest.get(tid, (0.0, ""))[0]:
            self.longest[tid] = (seconds, doing)

    def _what(self, tid: str) -> str | None:
        task = f"/proc/{self.pid}/task/{tid}"
        try:
            stat = Path(f"{task}/stat").read_text()
            if tid not in self.names:
                self.names[tid] = Path(f"{task}/comm").read_text().strip()
        except (FileNotFoundError, ProcessLookupError):
            return None  # the thread ended between the listing and the read
        state = stat.rsplit(")", 1)[1].split()[0]
        if state == "R":
            return "on the CPU"
        frames = self._stack(task)
        if frames is None:
            return "blocked" if state == "D" else "sleeping"
        if state != "D" and any(wait in frame for frame in frames[:4] for wait in IDLE_WAITS):
            return "idle"
        calls = [frame for frame in frames if frame.startswith(("__x64_sys_", "__arm64_sys_"))]
        call = calls[0].split("_sys_", 1)[1] if calls else "the kernel"
        return f"blocked in {call} ({frames[0]})" if frames else f"blocked in {call}"

    def _stack(self, task: str) -> list[str] | None:
        if not self.stacks_readable:
            return None
        try:
            lines = Path(f"{task}/stack").read_text().splitlines()
        except PermissionError:
            self.stacks_readable = False
            return None
        except (FileNotFoundError, ProcessLookupError):
            return []
        return [line.split()[1].split("+")[0] for line in lines if len(line.split()) > 1]

    def report(self) -> dict[str, Any]:
        threads = []
        for tid, counts in sorted(self.samples.items(), key=lambda kv: int(kv[0])):
            total = sum(counts.values())
            longest = self.longest.get(tid)
            threads.append(
                {
                    "tid": int(tid),
                    "name": self.names.get(tid, ""),
                    "samples": total,
                    "shares": {what: n / total for what, n in counts.most_common()},
                    "longest_blocked_ms": round(longest[0] * 1000, 1) if longest else 0.0,
                    "longest_blocked_in": longest[1] if longest else "",
                }
            )
        return {"pid": self.pid, "stacks_readable": self.stacks_readable, "threads": threads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pid", type=int, help="the process to watch")
    parser.add_argument("--every-ms", type=float, default=5.0, help="time between samples (default 5)")
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long (default: until it ends)")
    parser.add_argument("--json", dest="json_path", default=None, help="also write the report as JSON to this file")
    args = parser.parse_args()
    if not os.path.isdir(f"/proc/{args.pid}"):
        sys.exit(f"error: no process {args.pid}; give the PID of a running process")
    sampler = Sampler(args.pid)
    deadline = None if args.seconds is None else time.monotonic() + args.seconds
    try:
        while sampler.sample() and (deadline is None or time.monotonic() < deadline):
            time.sleep(args.every_ms / 1000)
    except KeyboardInterrupt:
        pass
    sampler.finish()
    found = sampler.report()
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(found, indent=1))
    if not sampler.stacks_readable:
        print("kernel stacks are readable by root only: threads off the CPU show as sleeping or blocked")
    for thread in found["threads"]:
        print(f"thread {thread['tid']} ({thread['name']}), {thread['samples']} samples")
        for what, share in thread["shares"].items():
            print(f"  {share:7.2%}  {what}")
        if thread["longest_blocked_ms"]:
            print(f"  longest blocked: {thread['longest_blocked_ms']} ms, {thread['longest_blocked_in']}")


if __name__ == "__main__":
    main()
