"""Named leases with fencing tokens.

A lease has one owner until it expires.  Taking over an expired (or
released) lease increments its token; work that must not run twice checks
its token *inside its own transaction* with :func:`check_fence`, so a holder
that was paused past its expiry cannot commit after someone else took over.
"""

from __future__ import annotations

import os
import secrets
import socket
from typing import Any

import attrs

from core.db import Database
from core.errors import LeaseLost


def make_owner() -> str:
    """``host:pid:random``: unique per process start."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


@attrs.frozen
class Lease:
    """A lease we hold.

    Attributes:
        name: the lease, e.g. ``tick``.
        owner: our owner string.
        token: fencing token; grows at every takeover.
        expires_at_ms: when it lapses unless renewed.
    """

    name: str
    owner: str
    token: int
    expires_at_ms: int


_SELECT = "SELECT owner, token, expires_at_ms FROM leases WHERE name = ?"


def try_acquire(db: Database, name: str, owner: str, ttl_ms: int, now_ms: int) -> Lease | None:
    """Take or renew ``name`` for ``owner``; None when someone else holds it."""
    with db.write():
        row = db.one(_SELECT, (name,))
        if row is None:
            token = 1
            db.execute(
                "INSERT INTO leases(name, owner, token, expires_at_ms, acquired_at_ms) VALUES (?, ?, ?, ?, ?)",
                (name, owner, token, now_ms + ttl_ms, now_ms),
            )
            return Lease(name, owner, token, now_ms + ttl_ms)
        held_by, token, expires_at = row
        if held_by == owner and expires_at > now_ms:
            db.execute("UPDATE leases SET expires_at_ms = ? WHERE name = ?", (now_ms + ttl_ms, name))
            return Lease(name, owner, token, now_ms + ttl_ms)
        if expires_at > now_ms:
            return None
        token += 1
        db.execute(
            "UPDATE leases SET owner = ?, token = ?, expires_at_ms = ?, acquired_at_ms = ? WHERE name = ?",
            (owner, token, now_ms + ttl_ms, now_ms, name),
        )
        return Lease(name, owner, token, now_ms + ttl_ms)


def check_fence(db: Database, lease: Lease, now_ms: int) -> None:
    """Raise LeaseLost unless ``lease`` is still current; call inside the work's transaction."""
    row = db.one(_SELECT, (lease.name,))
    owner, token, expires_at_ms = row if row is not None else (None, None, 0)
    if (owner, token) != (lease.owner, lease.token) or expires_at_ms <= now_ms:
        holder = "nobody" if row is None else f"{owner} (token {token})"
        raise LeaseLost(
            f"lease {lease.name!r} token {lease.token} is no longer ours; now held by {holder}. "
            "This process must stop doing fenced work and wait as a standby"
        )


def release(db: Database, lease: Lease) -> None:
    """Let the lease lapse now (the next taker still gets a higher token)."""
    with db.write():
        db.execute(
            "UPDATE leases SET expires_at_ms = 0 WHERE name = ? AND owner = ? AND token = ?",
            (lease.name, lease.owner, lease.token),
        )


def current(db: Database, name: str) -> dict[str, Any] | None:
    """Lease ``name`` as stored: ``owner``, ``token``, ``expires_at_ms``, ``acquired_at_ms``; None if never taken."""
    row = db.one("SELECT owner, token, expires_at_ms, acquired_at_ms FROM leases WHERE name = ?", (name,))
    if row is None:
        return None
    owner, token, expires_at_ms, acquired_at_ms = row
    return {"owner": owner, "token": token, "expires_at_ms": expires_at_ms, "acquired_at_ms": acquired_at_ms}
