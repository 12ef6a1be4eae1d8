"""What a test looks for in every output a user or an operator sees: message texts and the database's keys."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from core import keys


def key_texts(secret: bytes) -> list[str]:
    """The forms a leaked key would take in text: the secret and the SQLite cipher key, in hex either case."""
    raw = [secret, keys.cipher_key(secret)]
    return [form for key in raw for form in (key.hex(), key.hex().upper())]


def leaks(outputs: Iterable[str], texts: Iterable[str]) -> list[str]:
    """The ``texts`` found in any of ``outputs``."""
    joined = "\n".join(outputs)
    return [text for text in texts if text in joined]


def log_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every record captured, formatted with its arguments, and its exception's text."""
    return [record.getMessage() + (record.exc_text or "") for record in caplog.records]
