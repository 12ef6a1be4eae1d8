"""The docs stay true: every setting and status key is documented."""

from __future__ import annotations

import re

import pytest

from core.settings import SETTINGS
from core.status import STATUS_KEYS
from tests.conftest import ROOT

OPERATIONS = (ROOT / "docs" / "operations.md").read_text()


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_every_setting_is_documented_with_its_default(setting):
    row = re.search(rf"^\| `{setting.name}` \| `?([^|`]+)`? \|", OPERATIONS, re.MULTILINE)
    assert row, f"docs/operations.md lacks a settings row for {setting.name}"
    assert row.group(1).strip() == str(setting.default), f"{setting.name}: documented default is stale"


@pytest.mark.parametrize("key", STATUS_KEYS)
def test_every_status_key_is_documented(key):
    assert re.search(rf"^\| `{key}` \|", OPERATIONS, re.MULTILINE), f"status key {key} is not documented"


def test_readme_starts_with_the_two_commands():
    lines = [l for l in (ROOT / "README.md").read_text().splitlines() if l.strip()]
    assert lines[0] == "# Tessera"
    commands = [l for l in lines[1:8] if l.startswith("python3 -m venv")]
    assert len(commands) == 2 and commands[0].endswith("tessera demo") and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == commands[1], ".ci/run must run the README's test command"
