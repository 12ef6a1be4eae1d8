"""Publishing the outgoing queue through the loopback transport."""

from __future__ import annotations

from core import publish, queues
from tests.fixtures import ledger


def test_the_loopback_keeps_only_its_latest_messages(make_app):
    """Regression: ``sent`` kept every message a long-running daemon ever published (unbounded memory)."""
    app = make_app([ledger], ["ledger"])
    loopback = app.registry.transports["loopback"]
    total = publish.LoopbackTransport.KEPT + 500
    with app.db.write():
        for n in range(total):
            queues.enqueue_outgoing(app.db, "ledger", "loopback", "", ledger.wire("deposit", f"d{n}"), 0)
    while publish.publish_due(app.runtime):
        pass
    assert app.db.value("SELECT count(*) FROM outgoing WHERE status = 'sent'") == total
    assert app.db.value("SELECT count(*) FROM incoming") == total  # every message was echoed
    assert len(loopback.sent) == publish.LoopbackTransport.KEPT
    assert loopback.sent[-1][2] == ledger.wire("deposit", f"d{total - 1}")
