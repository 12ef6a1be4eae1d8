"""``tessera serve --xmtp-port 0`` as its own process on an encrypted database, for real XMTP clients."""

from __future__ import annotations

import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.helpers import query_file
from tests.sovereign.server_helpers import SERVE, ServerProcess, init_database


def _forward(proc: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
    """The server's stdout lines, as they come (a reader thread: select on a buffered pipe misses lines)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.put(line.strip())


class NodeProcess(ServerProcess):
    """A ``tessera serve`` process that also serves XMTP; ``url`` is the XMTP node's (``http://...``).

    The XMTP port is kept across restarts (clients hold the URL), as a restarted real node keeps its address.
    """

    def __init__(self, db: Path, *args: str, xmtp_port: int = 0):
        super().__init__(db, *args)
        self.xmtp_port = xmtp_port
        self.ws_url = ""

    def start(self, timeout: float = 30) -> NodeProcess:
        with self.log.open("a") as log:
            self.proc = subprocess.Popen(
                [*SERVE, "--db", str(self.db), "--port", "0", f"--xmtp-port={self.xmtp_port}", *self.args],
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_forward, args=(self.proc, lines), daemon=True).start()
        try:
            ws_line, xmtp_line = lines.get(timeout=timeout), lines.get(timeout=timeout)
        except queue.Empty:
            ws_line = xmtp_line = ""
        if not (ws_line.startswith("listening on ") and xmtp_line.startswith("xmtp node on http://")):
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"tessera serve did not start: {ws_line!r}\n{self.log.read_text()[-3000:]}")
        self.ws_url = ws_line.removeprefix("listening on ")
        self.port = int(self.ws_url.rsplit(":", 1)[1])
        self.url = xmtp_line.removeprefix("xmtp node on ")
        self.xmtp_port = int(self.url.rsplit(":", 1)[1])
        return self

    def restart(self) -> NodeProcess:
        """SIGTERM, wait, and start again on the same ports' XMTP address."""
        assert self.stop() == 0, self.log.read_text()[-3000:]
        return self.start()

    def killed_and_restarted(self) -> NodeProcess:
        self.kill()
        return self.start()

    def rows(self, sql: str) -> list[Any]:
        """A raw read of the database (the server may be running: WAL lets it)."""
        return [tuple(row) for row in query_file(str(self.db), sql)]

    def __enter__(self) -> NodeProcess:
        return self.start() if self.proc is None else self


def new_node(folder: Path, *args: str) -> NodeProcess:
    db = folder / "node.db"
    init_database(db)
    return NodeProcess(db, *args)
