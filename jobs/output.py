"""How the command line prints values: BLOBs never reach a terminal as raw bytes.

Text output shows bytes as lowercase hex; ``--json`` output carries them as
base64 strings (JSON has no bytes).  Plugins' commands use these too.
"""

from __future__ import annotations

import base64
import json
from typing import Any


def text(value: object) -> str:
    """``value`` for a line of text output: bytes as hex, anything else as ``str``."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural unless the count is one: "1 blob", "3 blobs".

    The count keeps no thousands separator: a size or an id-like number stays one a user can paste back.
    """
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"


def _json_default(value: object) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def to_json(value: object, *, sort_keys: bool = False, ensure_ascii: bool = True) -> str:
    """``value`` as indented JSON, bytes as base64 strings."""
    return json.dumps(value, indent=2, sort_keys=sort_keys, ensure_ascii=ensure_ascii, default=_json_default)


def to_json_line(value: object) -> str:
    """``value`` as one line of JSON (what long-running commands print, a line per record), keys sorted."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=_json_default)
