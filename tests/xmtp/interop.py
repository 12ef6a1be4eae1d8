"""The interop matrix: each scenario of tests/xmtp/interop_scenarios.py between real libxmtp v1.10.0 clients and
a Tessera XMTP member, through a fresh ``tessera serve --xmtp-port`` process; prints pass or fail per scenario.

    PYTHONPATH=. python -m tests.xmtp.interop [--slow]

``--slow`` runs the larger variants (50 messages each way among four members;
50 rounds of two Tessera and two libxmtp members committing).
The crash scenarios (the tick daemon SIGKILLed during a 300-message catch-up,
and between building a commit and publishing it) are their pytest tests
(tests/xmtp/test_node_crash_loop.py, test_node_killed_between_build_and_publish.py);
their lines are printed by running them.
Exits 1 when a scenario failed, 2 when the libxmtp peer cannot be installed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path

import attrs

from core.app import App
from core.clock import SystemClock
from core.settings import Settings
from protocols import xmtp
from tests._peers import PeerUnavailable
from tests.helpers import ROOT, TEST_KEY_FILE, PluginEnvironment, open_test_app
from tests.xmtp import interop_scenarios as scenarios
from tests.xmtp import leave_scenarios as leaving
from tests.xmtp import race_scenarios as races
from tests.xmtp.node_member import NodeMember
from tests.xmtp_node.libxmtp_peer import LibxmtpClient, client_factory, install
from tests.xmtp_node.node_process import new_node


@attrs.define
class MatrixPeers:
    """Fresh libxmtp clients and Tessera members for one scenario, all in ``folder``."""

    url: str
    folder: Path
    clients: Callable[[str], LibxmtpClient]
    apps: list[App] = attrs.Factory(list)

    def libxmtp(self, name: str) -> LibxmtpClient:
        return self.clients(name)

    def tessera(self, name: str) -> NodeMember:
        return NodeMember.create(self._app(name), self.url)

    def tessera_installation(self, name: str, of: NodeMember) -> NodeMember:
        return of.another_installation(self._app(name))

    def pass_time(self, seconds: float) -> None:
        time.sleep(seconds)

    def _app(self, name: str) -> App:
        settings = Settings.load(env=PluginEnvironment(), key_file=TEST_KEY_FILE)
        app = open_test_app(str(self.folder / f"{name}.db"), settings, [xmtp], ["xmtp"], clock=SystemClock())
        self.apps.append(app)
        return app


def run(name: str, scenario: Callable[[scenarios.Peers], None], python: Path, folder: Path) -> tuple[bool, float, str]:
    started = time.monotonic()
    make, close_all = client_factory(python, folder / "clients")
    try:
        with new_node(folder) as node:
            peers = MatrixPeers(node.url, folder, make)
            try:
                scenario(peers)
            finally:
                close_all()
                for app in peers.apps:
                    app.close()
    except Exception:  # a scenario's failure is a row of the matrix, not the end of the run
        return False, time.monotonic() - started, traceback.format_exc(limit=3).strip().splitlines()[-1]
    return True, time.monotonic() - started, ""


#: The crash scenarios run whole processes of their own: each is its pytest test, its line printed by running it.
CRASH_TESTS = {
    "tick daemon SIGKILLed, 300-message catch-up": ["tests/xmtp/test_node_crash_loop.py", "-k", "300"],
    "tick daemon SIGKILLed between build and publish": ["tests/xmtp/test_node_killed_between_build_and_publish.py"],
}


def run_crash_test(line: str, tests: list[str]) -> bool:
    crash = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", *tests], cwd=ROOT, capture_output=True, text=True
    )
    tail = crash.stdout.strip().splitlines()[-1] if crash.stdout.strip() else crash.stderr.strip()[-200:]
    print(f"{line:<44} {'pass' if crash.returncode == 0 else 'FAIL':<6} {tail}")
    return crash.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--slow",
        action="store_true",
        help="also the larger variants: 50 messages each way among 4 members, 50 rounds of 4 committing",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("TESSERA_KEY_FILE", TEST_KEY_FILE)
    try:
        python = install()
    except PeerUnavailable as error:
        print(f"libxmtp peer unavailable: {error}", file=sys.stderr)
        return 2
    chosen = {**scenarios.SCENARIOS, **leaving.SCENARIOS, **races.SCENARIOS}
    if args.slow:
        chosen["50 messages each way, four members"] = partial(scenarios.messages_both_ways, count=50, others=3)
        chosen["two Tessera and two libxmtp members, 50 rounds"] = partial(races.four_commit_in_a_loop, rounds=50)
    failed = 0
    print(f"{'scenario':<44} {'result':<6} seconds")
    for name, scenario in chosen.items():
        with tempfile.TemporaryDirectory(prefix="xmtp-interop-") as folder:
            passed, seconds, why = run(name, scenario, python, Path(folder))
        failed += not passed
        print(f"{name:<44} {'pass' if passed else 'FAIL':<6} {seconds:5.1f}" + (f"  {why}" if why else ""), flush=True)
    for line, tests in CRASH_TESTS.items():
        failed += not run_crash_test(line, tests)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
