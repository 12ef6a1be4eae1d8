"""``marmot identity new`` on a database with no key file: the error's commands, pasted, make it work."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from tests.helpers import TESSERA, clean_environment, one_line_error


def tessera(home: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = clean_environment()
    del env["TESSERA_KEY_FILE"]  # a newcomer's shell: no key configured anywhere
    return subprocess.run([*TESSERA, *args], capture_output=True, text=True, cwd=home, env=env, timeout=120)


def test_the_error_names_the_commands_that_make_and_pass_a_key_file_and_they_work(tmp_path: Path) -> None:
    assert tessera(tmp_path, ["--db", "chat.db", "init", "--no-encryption"]).returncode == 0

    line = one_line_error(tessera(tmp_path, ["--db", "chat.db", "marmot", "identity", "new"]))

    make, use = re.findall(r"`(tessera [^`]+)`", line)[:2]
    assert make == "tessera --db chat.db key new --out chat.key"  # every hint names the database it came from
    assert use == "tessera --db chat.db --key-file chat.key COMMAND"
    assert tessera(tmp_path, shlex.split(make)[1:]).returncode == 0
    pasted = tessera(tmp_path, [*shlex.split(use)[1:-1], "marmot", "identity", "new"])
    assert pasted.returncode == 0 and pasted.stdout.startswith("created account npub1"), pasted.stderr
