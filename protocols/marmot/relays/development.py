"""A Nostr relay for development: nostr-sdk's ``LocalRelay`` (rust-nostr), listening on 127.0.0.1.

It keeps events in memory only, so everything is gone when it stops.  It
serves from nostr-sdk's own threads: :func:`start` returns once it listens,
and :meth:`DevelopmentRelay.stop` ends it.  nostr-sdk is an optional extra
(``relay``); without it :func:`start` says how to install it.
"""

from __future__ import annotations

from typing import Any

import attrs

from core import distribution
from protocols.marmot.errors import RelayNotStarted, RelaySoftwareMissing
from protocols.marmot.relays.blocking import run_blocking

INSTALL_HINT = f"pip install '{distribution.NAME}[relay]' (or pip install nostr-sdk)"

# LocalRelay's default is 60 events a minute per connection, which a Marmot
# journey (KeyPackages, welcomes, commits, a burst of messages) soon exceeds.
_REQUESTS_PER_CONNECTION = 1000
_EVENTS_PER_MINUTE = 1_000_000


def _nostr_sdk() -> Any:
    try:
        import nostr_sdk  # type: ignore[import-untyped]
    except ImportError:
        raise RelaySoftwareMissing(
            f"the development relay needs nostr-sdk, which is not installed: {INSTALL_HINT}"
        ) from None
    return nostr_sdk


@attrs.define
class DevelopmentRelay:
    """A running relay: its ``ws://`` address, and the handle that stops it."""

    url: str
    _relay: Any = attrs.field(repr=False)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def stop(self) -> None:
        """Stop listening and drop every connection (its events are lost)."""
        self._relay.shutdown()


def start(port: int = 0) -> DevelopmentRelay:
    """Start a relay on 127.0.0.1:``port`` (0: a free port the system picks)."""
    sdk = _nostr_sdk()

    async def build_and_run() -> tuple[Any, str]:
        limits = sdk.RateLimit(max_reqs=_REQUESTS_PER_CONNECTION, notes_per_minute=_EVENTS_PER_MINUTE)
        builder = sdk.LocalRelayBuilder().addr("127.0.0.1").rate_limit(limits)
        if port:
            builder = builder.port(port)
        relay = builder.build()
        await relay.run()
        return relay, str(await relay.url())

    try:
        relay, url = run_blocking(build_and_run)
    except sdk.NostrSdkError as error:
        raise RelayNotStarted(f"the relay could not listen on 127.0.0.1:{port}: {error}; try another --port") from None
    return DevelopmentRelay(url.rstrip("/"), relay)
