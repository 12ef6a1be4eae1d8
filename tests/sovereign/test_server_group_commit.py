"""The server's writer commits waiting writes together: a refused one undoes only itself, the rest are stored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from core.clock import SystemClock
from core.settings import Settings
from protocols import sovereign
from protocols.libraries.delivery.records import Stored
from protocols.sovereign.errors import NotAMember
from protocols.sovereign.server.pool import StorePool
from protocols.sovereign.service import Store
from tests.helpers import open_test_app
from tests.sovereign.server_helpers import Installation, new_group_id, private_message


def test_a_refused_write_among_many_waiting_ones_undoes_only_itself(tmp_path) -> None:
    path = str(tmp_path / "store.db")
    open_test_app(path, Settings.load(env={}), [sovereign], ["sovereign"], clock=SystemClock()).close()
    alice, stranger = Installation(), Installation()
    group = new_group_id()

    def open_store():
        app = open_test_app(path, Settings.load(env={}), [sovereign], ["sovereign"], clock=SystemClock())
        return app, Store(app)

    def send_as(sender: str, payload: bytes) -> Callable[[Store], Stored]:
        return lambda store: store.send(sender, group, payload)

    async def scenario() -> list[Stored | BaseException]:
        pool = StorePool(open_store, readers=1)
        pool.start()
        try:
            await pool.write("join", lambda store: store.join(alice.id, group))
            sends = [private_message(group) for _ in range(200)]
            futures = [pool.write("send", send_as(alice.id, p)) for p in sends[:100]]
            futures.append(pool.write("send", send_as(stranger.id, private_message(group))))
            futures += [pool.write("send", send_as(alice.id, p)) for p in sends[100:]]
            return await asyncio.gather(*futures, return_exceptions=True)
        finally:
            pool.stop()

    results = asyncio.run(scenario())
    refused = [r for r in results if isinstance(r, Exception)]
    assert len(refused) == 1 and isinstance(refused[0], NotAMember)
    app, store = open_store()
    try:
        assert store.stats().messages == 200
        ids = [row[0] for row in app.db.all("SELECT id FROM sovereign_messages ORDER BY id")]
        assert ids == [r.message.id for r in results if isinstance(r, Stored)]  # replies in server order
    finally:
        app.close()
