"""A tick daemon over the marmot protocol only, for the crash-loop test.

    python -m tests.marmot.worker DB [--mode forever|until_idle] [--ttl MS]

The at-rest key and plugin settings come from the environment.
"""

from __future__ import annotations

import argparse
import subprocess

from core.app import App
from jobs.logs import configure_logging
from protocols import marmot
from tests.helpers import open_test_app, start_worker, worker_settings


def open_marmot(path: str, **settings: int) -> App:
    return open_test_app(path, worker_settings(**{"max_attempts": 5, **settings}), [marmot], ["marmot"])


def spawn(db: str, *args: str) -> subprocess.Popen[str]:
    """This worker on ``db`` as its own process (``args`` as on its command line), once it is ready."""
    return start_worker("tests.marmot.worker", db, *args)


def main() -> None:
    from jobs.tick import TickDaemon

    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--mode", default="forever")
    parser.add_argument("--ttl", type=int, default=2000)
    args = parser.parse_args()
    configure_logging("WARNING")
    app = open_marmot(args.db, lease_ttl_ms=args.ttl)
    daemon = TickDaemon(app, mode=args.mode)
    daemon.install_signal_handlers()
    print("ready", flush=True)
    report = daemon.run()
    print(f"done {report.exit_reason} {report.items} {report.takeovers}", flush=True)


if __name__ == "__main__":
    main()
