"""A tick daemon over the marmot protocol only, for the crash-loop test.

    python -m tests.marmot.worker DB [--mode forever|until_idle] [--ttl MS]

The at-rest key and plugin settings come from the environment.
"""

from __future__ import annotations

import argparse

from core.plugins import make_plugin_manager
from core.settings import Settings
from jobs.logs import configure_logging
from protocols import marmot
from schema_loader.setup import open_app


def open_marmot(path: str, **settings):
    base = {"retry_base_ms": 20, "retry_max_ms": 200, "max_attempts": 5, "busy_timeout_ms": 10_000, "idle_max_ms": 50}
    return open_app(
        Settings.load(env={}, **{**base, **settings}),
        make_plugin_manager([marmot], entry_points=False),
        enable=["marmot"],
        create=True,
        path=path,
    )


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
