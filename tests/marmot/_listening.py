"""A long-running command (``tessera marmot listen``) whose output lines are read as they come."""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
import time

#: How long a test waits for one line of a listener, or for it to stop.
LISTEN_WAIT_S = 20.0


class Listening:
    """The process's stdout lines, read by a thread of their own into :attr:`lines`."""

    def __init__(self, process: subprocess.Popen[str]):
        self.process = process
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str) -> str:
        """The first line containing ``text`` (lines before it are consumed)."""
        deadline = time.monotonic() + LISTEN_WAIT_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} within {LISTEN_WAIT_S} s")

    def wait_for_all(self, texts: set[str], timeout_s: float) -> float:
        """Wait until a line containing each of ``texts`` came; returns when the last one did (monotonic)."""
        missing = set(texts)
        deadline = time.monotonic() + timeout_s
        while missing and time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.05)
            except queue.Empty:
                continue
            missing -= {text for text in missing if text in line}
        assert not missing, f"{len(missing)} lines never came within {timeout_s} s, e.g. {sorted(missing)[:3]}"
        return time.monotonic()

    def interrupt(self) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(LISTEN_WAIT_S)
