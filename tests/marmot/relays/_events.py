"""Signed events for relay tests: each author has a real key, each event distinct content."""

from __future__ import annotations

import itertools
import os
import time
from typing import Any

from protocols.marmot.wire.nostr import generate_secret_key, sign_event

_serial = itertools.count()


def now() -> int:
    """The current Unix time in seconds."""
    return int(time.time())


def group_id() -> str:
    """A fresh 64-hex value for an ``h`` tag, so tests sharing a relay never see each other's events."""
    return os.urandom(32).hex()


class Author:
    """One signing key; :meth:`event` makes signed events with unique content."""

    def __init__(self) -> None:
        self.secret_key = generate_secret_key()
        self.pubkey = sign_event({"created_at": 0, "kind": 1, "tags": [], "content": ""}, self.secret_key)["pubkey"]

    def event(
        self,
        *,
        kind: int = 445,
        tags: list[list[str]] | None = None,
        created_at: int | None = None,
        content: str | None = None,
    ) -> dict[str, Any]:
        """A signed event (``created_at`` defaults to now, ``content`` to a unique string)."""
        return sign_event(
            {
                "created_at": now() if created_at is None else created_at,
                "kind": kind,
                "tags": tags or [],
                "content": f"message {next(_serial)}" if content is None else content,
            },
            self.secret_key,
        )


def ids(events: Any) -> set[str]:
    """The ids of some events."""
    return {event["id"] for event in events}
