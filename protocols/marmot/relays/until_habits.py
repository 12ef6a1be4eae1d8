"""Which relays read a REQ's ``until`` as exclusive, so paging asks them for ``until + 1`` from the first page.

NIP-01 makes ``until`` inclusive; some relays (the ``nostr-relay`` package)
treat it as exclusive, which paging discovers on a page that should have
repeated the boundary second (:mod:`.paging`).  One transport shares one
:class:`ExclusiveUntil` across its fetches, and whoever owns the transport may
seed it with what an earlier process learned, so a relay is discovered once
and not in every new process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


class ExclusiveUntil:
    """The set of relays (normalised addresses) known to read ``until`` as exclusive; safe across threads."""

    def __init__(self, known: Iterable[str] = ()):
        self._known = set(known)
        self._lock = threading.Lock()

    def __contains__(self, relay: object) -> bool:
        with self._lock:
            return relay in self._known

    def learn(self, relay: str) -> None:
        with self._lock:
            self._known.add(relay)
