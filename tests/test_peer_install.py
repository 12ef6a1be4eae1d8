"""The peer cache's install: processes that want the same peer at once (pytest-xdist's workers) build it once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests._peers import install_once
from tests.helpers import ROOT, clean_environment

# Each process installs the "demo" peer; the build notes that it ran, then takes long enough for the others to
# arrive while it is under way.
INSTALL = """
import sys, time
from pathlib import Path
from tests._peers import install_once

def build(work: Path) -> None:
    with open(sys.argv[1], "a") as builds:
        builds.write("built\\n")
    time.sleep(1.0)
    (work / "tool").write_text("ok")

print(install_once("demo", build, pinned="demo==1"))
"""


def test_processes_installing_the_same_peer_at_once_build_it_once(tmp_path: Path) -> None:
    builds = tmp_path / "builds.txt"
    env = clean_environment(XDG_CACHE_HOME=str(tmp_path / "cache"))
    installers = [
        subprocess.Popen(
            [sys.executable, "-c", INSTALL, str(builds)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    homes = {installer.communicate(timeout=60)[0].strip() for installer in installers}
    assert [installer.returncode for installer in installers] == [0, 0, 0]
    assert builds.read_text() == "built\n"
    (home,) = homes
    assert (Path(home) / "tool").read_text() == "ok"
    assert sorted(path.name for path in Path(home).parent.iterdir()) == [".install.lock", Path(home).name]


def test_a_failed_build_leaves_nothing_and_the_next_process_builds_again(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def broken(work: Path) -> None:
        (work / "half").write_text("")
        raise RuntimeError("network down")

    with pytest.raises(RuntimeError, match="network down"):
        install_once("demo", broken, pinned="demo==1")
    folder = tmp_path / "tessera" / "peers" / "demo"
    assert [path.name for path in folder.iterdir()] == [".install.lock"]

    def working(work: Path) -> None:
        (work / "tool").write_text("ok")

    home = install_once("demo", working, pinned="demo==1")
    assert (home / "tool").read_text() == "ok"
