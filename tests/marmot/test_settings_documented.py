"""Every ``TESSERA_MARMOT_*`` setting has a row in docs/marmot.md's settings table."""

from __future__ import annotations

from pathlib import Path

from protocols.marmot import settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "marmot.md"


def test_every_marmot_setting_is_documented() -> None:
    text = DOC.read_text()
    missing = [name for name in settings._ENV.values() if f"| `{name}` |" not in text]
    assert missing == []
