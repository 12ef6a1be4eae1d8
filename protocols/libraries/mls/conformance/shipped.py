"""The official RFC 9420 vector files that ship inside the package (``vectors/``, see its SOURCES.md).

They are package data, so a plain (non-editable) install can check itself
with ``tessera mls conformance`` and no checkout at hand.
"""

from __future__ import annotations

from pathlib import Path

VECTOR_DIR = Path(__file__).with_name("vectors")


def vector_file(name: str) -> Path:
    """The shipped ``<name>.json``."""
    return VECTOR_DIR / f"{name}.json"


def vector_files() -> list[Path]:
    """Every shipped vector file, by name."""
    return sorted(VECTOR_DIR.glob("*.json"))
