"""Reads of the Marmot read models for the CLI (history pages live in :mod:`.history`)."""

from __future__ import annotations

import json

from core import contract
from protocols.marmot.cursor import Cursor
from protocols.marmot.read.states import OuterState

_GROUPS = (
    "SELECT gid, epoch, members, admins, self_pubkey, joined_epoch, active, rollbacks, resume_created_at, "
    "resume_id FROM marmot_groups ORDER BY gid"
)
_STATES = "SELECT state, count(*) FROM marmot_processed WHERE gid = ? GROUP BY state ORDER BY state"
_FAILED = (
    "SELECT outer_id, outer_created_at, epoch, content_type, reason, detail FROM marmot_processed "
    "WHERE gid = ? AND state = ? ORDER BY outer_created_at, outer_id LIMIT ?"
)


def groups(db: contract.Database) -> list[dict]:
    """Every joined group with its epoch, members, resume cursor and outer-event counts by state."""
    with db.read():
        return [_group(db, row) for row in db.all(_GROUPS)]


def _group(db: contract.Database, row: tuple) -> dict:
    gid, epoch, members, admins, self_pubkey, joined, active, rollbacks, created, ident = row
    cursor = None if created < 0 else str(Cursor(created, ident.hex()))
    return {
        "group": gid.hex(),
        "epoch": epoch,
        "members": members,
        "admins": json.loads(admins),
        "self": self_pubkey,
        "joined_epoch": joined,
        "active": bool(active),
        "rollbacks": rollbacks,
        "resume_cursor": cursor,
        "outer_events": dict(db.all(_STATES, (gid,))),
    }


def outer_events(db: contract.Database, gid: str, state: str = OuterState.FAILED, limit: int = 1000) -> list[dict]:
    """Outer events of ``gid`` in ``state`` (default Failed), oldest first, with reasons."""
    with db.read():
        rows = db.all(_FAILED, (bytes.fromhex(gid), state, limit))
    return [
        {
            "outer_id": r[0].hex(),
            "created_at": r[1],
            "epoch": r[2],
            "content_type": r[3],
            "reason": r[4],
            "detail": r[5],
        }
        for r in rows
    ]
