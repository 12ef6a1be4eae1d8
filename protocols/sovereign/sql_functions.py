"""SQL functions the store registers on each of its connections (the ``prepare_connection`` hook).

``sovereign_fact_seq(digest)``: the event log's seq of the stored fact whose id is ``digest`` (a message's
digest), or NULL when the log has none.  Migration 004 uses it to point each message at its fact, through the
core's lookup (the plugin's SQL never names the core's tables).
"""

from __future__ import annotations

import apsw

from core import eventlog

FACT_SEQ = "sovereign_fact_seq"


def register(conn: apsw.Connection) -> None:
    def fact_seq(*args: apsw.SQLiteValue) -> int | None:
        digest = args[0]
        # Imported on the first call, not at registration: every connection of every app that has the plugin
        # registers the function, and the commands module is not cheap to import.
        from protocols.sovereign.commands import PROTOCOL

        return eventlog.seq_of(conn, PROTOCOL, digest) if isinstance(digest, bytes) else None

    # Not deterministic: it reads the log, so SQLite must call it for every row.
    conn.create_scalar_function(FACT_SEQ, fact_seq, 1)
