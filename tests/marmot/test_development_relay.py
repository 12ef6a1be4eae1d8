"""``tessera marmot relay``: a real relay in its own process, used by the real command line, stopped by a signal."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocols.marmot.relays import NostrRelays
from protocols.marmot.wire.key_package_events import KEY_PACKAGE_KIND
from tests.helpers import TESSERA, clean_environment, one_line_error

pytestmark = pytest.mark.relay

STOP_TIMEOUT_S = 10


@pytest.fixture
def relay_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``tessera marmot relay --port 0`` running, and the address it printed first."""
    process = subprocess.Popen(
        [*TESSERA, "marmot", "relay", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=clean_environment(),
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    try:
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def tessera(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TESSERA, *args],
        capture_output=True,
        text=True,
        cwd=home,
        env=clean_environment(TESSERA_DB=str(home / "tessera.db"), **env),
        timeout=120,
    )


def test_a_key_package_published_through_the_relay_command_is_found_there_and_sigterm_exits_0(
    relay_process: tuple[subprocess.Popen[str], str], tmp_path: Path
) -> None:
    process, url = relay_process
    assert url.startswith("ws://127.0.0.1:") and int(url.rsplit(":", 1)[1]) > 0, url
    for args in (("init", "--protocol", "marmot"), ("marmot", "identity", "new")):
        assert tessera(tmp_path, *args).returncode == 0
    me = json.loads(tessera(tmp_path, "marmot", "whoami", "--json").stdout)["pubkey"]

    published = tessera(tmp_path, "marmot", "key-package", "publish", "--relay", url, "--count", "1", "--json")

    assert published.returncode == 0, published.stderr
    found = NostrRelays().fetch({"kinds": [KEY_PACKAGE_KIND], "authors": [me]}, [url]).raise_unless_complete()
    assert len(found.events) == 1 and found.events[0]["pubkey"] == me

    process.send_signal(signal.SIGTERM)
    assert process.wait(STOP_TIMEOUT_S) == 0
    assert process.stderr is not None and process.stderr.read().strip().endswith("relay stopped")


def test_ctrl_c_stops_the_relay_with_exit_0(relay_process: tuple[subprocess.Popen[str], str]) -> None:
    process, _ = relay_process
    process.send_signal(signal.SIGINT)
    assert process.wait(STOP_TIMEOUT_S) == 0


def test_a_taken_port_is_one_line_naming_the_port(
    relay_process: tuple[subprocess.Popen[str], str], tmp_path: Path
) -> None:
    _, url = relay_process
    port = url.rsplit(":", 1)[1]
    line = one_line_error(tessera(tmp_path, "marmot", "relay", "--port", port))
    assert f"127.0.0.1:{port}" in line and "--port" in line


def test_without_nostr_sdk_the_error_is_one_line_naming_the_install_command(tmp_path: Path) -> None:
    # The same command line, in a process where importing nostr_sdk fails as it does where it is not installed.
    without_sdk = "import sys; sys.modules['nostr_sdk'] = None; from jobs.cli import main; main()"
    outcome = subprocess.run(
        [TESSERA[0], "-c", without_sdk, "marmot", "relay", "--port", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_environment(),
        timeout=60,
    )
    line = one_line_error(outcome)
    assert "nostr-sdk" in line and "pip install 'tessera-cqrs[relay]'" in line


def test_check_starts_prints_the_address_and_exits_0(tmp_path: Path) -> None:
    checked = tessera(tmp_path, "marmot", "relay", "--check", "--port", "0", "--json")
    assert checked.returncode == 0, checked.stderr
    shown = json.loads(checked.stdout)
    assert shown["url"] == f"ws://127.0.0.1:{shown['port']}" and shown["port"] > 0
