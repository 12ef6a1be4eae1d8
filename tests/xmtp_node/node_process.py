"""``tessera serve --xmtp-port 0`` as its own process on an encrypted database, for real XMTP clients."""

from __future__ import annotations

import select
from pathlib import Path

from tests.helpers import query_file
from tests.sovereign.server_helpers import ServerProcess, init_database


class NodeProcess(ServerProcess):
    """A ``tessera serve`` process that also serves XMTP; ``url`` is the XMTP node's (``http://...``).

    The XMTP port is kept across restarts (clients hold the URL), as a restarted real node keeps its address.
    """

    def __init__(self, db: Path, *args: str, xmtp_port: int = 0):
        super().__init__(db, *args)
        self.xmtp_port = xmtp_port
        self.ws_url = ""

    def start(self, timeout: float = 30) -> NodeProcess:
        self.args = (*[a for a in self.args if not a.startswith("--xmtp-port=")], f"--xmtp-port={self.xmtp_port}")
        super().start(timeout)
        self.ws_url = self.url
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline().strip() if ready else ""
        assert line.startswith("xmtp node on http://"), f"{line!r}\n{self.log.read_text()[-3000:]}"
        self.url = line.removeprefix("xmtp node on ")
        self.xmtp_port = int(self.url.rsplit(":", 1)[1])
        return self

    def restart(self) -> NodeProcess:
        """SIGTERM, wait, and start again on the same ports' XMTP address."""
        assert self.stop() == 0, self.log.read_text()[-3000:]
        return self.start()

    def killed_and_restarted(self) -> NodeProcess:
        self.kill()
        return self.start()

    def rows(self, sql: str) -> list[tuple[object, ...]]:
        """A raw read of the database (the server may be running: WAL lets it)."""
        return [tuple(row) for row in query_file(str(self.db), sql)]


def new_node(folder: Path, *args: str) -> NodeProcess:
    db = folder / "node.db"
    init_database(db)
    return NodeProcess(db, *args)
