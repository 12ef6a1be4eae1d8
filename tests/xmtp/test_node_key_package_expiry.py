"""KeyPackages of the node profile past their lifetime: the key-package job deletes their private keys once the
lifetime's end (``not_after``) is more than the ``[xmtp] key_package_grace_s`` setting behind the clock, erasably
as a used one's are, and a current one that expired is replaced by a fresh one.

The clock is the app's (a ManualClock moved by hand); the KeyPackages are real, made by the plugin's own command
with libxmtp's 12-week lifetime.  No node is needed: the node named is one nobody listens on, so uploading waits,
and the deleting and topping up are local."""

from __future__ import annotations

from typing import Any

from core.clock import ManualClock
from core.state import ProtocolState
from protocols import xmtp
from protocols.libraries import erasable
from protocols.xmtp.node_profile import registration
from protocols.xmtp.settings import KEY_PACKAGE_GRACE_S
from protocols.xmtp.state import SEALER, Vault
from protocols.xmtp.transport.node import NodeService

NOBODY = "http://127.0.0.1:9"  # the discard port: uploads wait for the next pass


def _held(app: Any) -> dict[bytes, int]:
    """Our KeyPackages' refs and the end of each one's lifetime (seconds)."""
    with app.db.read():
        return {ref: registration.not_after(kept) for ref, kept in Vault.of(app.db).key_packages().items()}


def _sealed(app: Any, ref: bytes) -> bytes | None:
    with app.db.read():
        return ProtocolState(app.db, "xmtp").stored("kp/" + ref.hex())


def _forget(app: Any, grace_s: int) -> None:
    app.runtime.run_command("xmtp.node_forget_expired_key_packages", {"grace_s": grace_s})


def test_a_key_package_is_kept_through_its_grace_and_deleted_erasably_after_it(
    make_app: Any, clock: ManualClock
) -> None:
    app = make_app([xmtp], ["xmtp"])
    app.runtime.run_command("xmtp.node_identity_new", {"node": NOBODY})
    [(ref, end)] = _held(app).items()
    sealed = _sealed(app, ref)
    assert sealed is not None and erasable.is_erasable(sealed)
    grace = 3600
    for moment in (end - 1, end, end + grace):  # not past its end plus the grace: kept
        clock.now = moment * 1000
        _forget(app, grace)
        assert list(_held(app)) == [ref], moment
    clock.now = (end + grace + 1) * 1000
    _forget(app, grace)
    assert _held(app) == {}
    assert _sealed(app, ref) is None
    assert not erasable.key_file(app.db.path, SEALER.label, "kp/" + ref.hex()).exists()  # its key erased


def test_the_key_package_job_replaces_an_expired_current_one_and_deletes_it_after_the_grace(
    make_app: Any, clock: ManualClock
) -> None:
    app = make_app([xmtp], ["xmtp"])
    app.runtime.run_command("xmtp.node_identity_new", {"node": NOBODY})
    node = NodeService(NOBODY)
    try:
        registration.keep_stock(app.runtime, node)  # the node is down: nothing uploaded, the stock unchanged
        [(first, end)] = _held(app).items()
        with app.db.write():  # as if uploaded: it is the current one
            app.db.execute("INSERT INTO xmtp_published_key_packages(ref, published_at_ns) VALUES (?, 1)", (first,))

        clock.now = (end + 1) * 1000  # expired, within the default grace: a fresh one is made, the old one stays
        registration.keep_stock(app.runtime, node)
        held = _held(app)
        assert first in held and len(held) == 2

        clock.now = (end + KEY_PACKAGE_GRACE_S.default + 1) * 1000  # the grace is over: the old one goes
        registration.keep_stock(app.runtime, node)
        held = _held(app)
        assert first not in held and held  # and a fresh one waits to be uploaded
    finally:
        node.close()
