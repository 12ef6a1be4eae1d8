"""The XMTP node's part of the store's retention job (:mod:`protocols.sovereign.retention`): group messages
and welcomes older than ``retention_days`` go for good, oldest first, in batches of one ``sovereign.xmtp_expire``
command each (the retention facts, the purge of the stored facts and the rows, in one transaction).

Ids follow ``created_ns`` (both only grow, in commit order), so the oldest rows are the lowest ids and a
batch is read from the start of the table until the first row young enough to keep.
"""

from __future__ import annotations

from collections.abc import Callable

from core.runtime import Runtime

_OLDEST = {
    "group_messages": "SELECT id, created_ns FROM sovereign_xmtp_group_messages ORDER BY id LIMIT ?",
    "welcomes": "SELECT id, created_ns FROM sovereign_xmtp_welcomes ORDER BY id LIMIT ?",
}


def expire_by_age(
    runtime: Runtime, cutoff_ms: int, batch_size: Callable[[], int], expire: Callable[[str, list[int]], int]
) -> int:
    """Remove every group message and welcome stored before ``cutoff_ms``: ``expire(kind, ids)`` runs one
    batch of at most ``batch_size()`` and returns how many it removed.  Returns how many went in all."""
    cutoff_ns = cutoff_ms * 1_000_000
    removed = 0
    for kind, oldest in _OLDEST.items():
        while True:
            with runtime.db.read():
                rows = runtime.db.all(oldest, (batch_size(),))
            ids = [row_id for row_id, created_ns in rows if created_ns < cutoff_ns]
            if not ids:
                break
            removed += expire(kind, ids)
    return removed
