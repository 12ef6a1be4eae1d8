"""Every setting the plugin declares has a row in docs/marmot.md's settings table."""

from __future__ import annotations

from pathlib import Path

from protocols.marmot import settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "marmot.md"


def test_every_marmot_setting_is_documented() -> None:
    text = DOC.read_text()
    missing = [
        setting.key
        for setting in settings.SETTINGS
        if f"| `{setting.env_key}` | `[marmot] {setting.name}` |" not in text
    ]
    assert missing == []
