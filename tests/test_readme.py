"""The README's tour and Python snippet do what they say, and leave the checkout as they found it."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.helpers import ROOT, TESSERA, clean_environment

README = (ROOT / "README.md").read_text()


def _block(heading: str, language: str) -> str:
    section = README.split(f"## {heading}", 1)[1]
    found = re.search(rf"^```{language}\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert found, f"no {language} block under {heading!r}"
    return found.group(1)


def test_the_tour_moves_to_a_scratch_directory_before_it_writes_any_file():
    commands = [line.split("#", 1)[0].strip() for line in _block("A five-minute tour", "sh").splitlines()]
    commands = [command for command in commands if command]
    assert commands[0] == ". .venv/bin/activate"
    assert commands[1] == 'cd "$(mktemp -d)"', "every later file (chat.db, stream.jsonl, group/, plugins/) lands there"


def test_the_python_snippet_runs_and_closes_its_app(tmp_path):
    snippet = _block("A five-minute tour", "python")
    assert "with open_app(" in snippet
    # Run as written in a scratch directory; then the connection must refuse work, and the post be there.
    probe = snippet + (
        "try:\n"
        "    app.db.conn.execute('SELECT 1')\n"
        "except Exception as refused:\n"
        "    assert 'closed' in str(refused), refused\n"
        "else:\n"
        "    raise SystemExit('the app is still open after the with block')\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_environment(),
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    page = subprocess.run(
        [*TESSERA, "--db", "chat.db", "example", "page", "lobby", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_environment(),
        timeout=120,
    )
    assert page.returncode == 0, page.stderr
    assert "hi" in json.dumps(json.loads(page.stdout))
