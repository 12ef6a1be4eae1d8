"""Reading a relay's stored events completely: REQ pages walked backwards in time with ``until``.

Relays cap every REQ silently (500 and 6,000 are common), so "fewer than
``limit``" never means "done": paging goes on until a page brings nothing new.
Each page asks for ``until`` = the oldest ``created_at`` seen, which NIP-01
makes inclusive, so that second's events come again and are de-duplicated by
id.  Three real-world wrinkles are handled here:

* some relays (the ``nostr-relay`` package) treat ``until`` as exclusive; a
  page that should have repeated the boundary second but did not reveals it,
  and from then on that relay is asked for ``until + 1`` (a relay already
  known for it, see :mod:`.until_habits`, is asked so from the first page);
* before a relay has shown how it reads ``until``, the caller's own ``until``
  is sent as ``until + 1`` and the extra second dropped here, so an exclusive
  relay does not silently lose the caller's last second;
* a second holding more matching events than the relay returns per page
  would stop paging for good; instead that second is recorded as crowded
  (some of its events may be missing) and paging continues below it.  A page
  of already-seen events of one second is only *proof* of that when the
  walk shows the relay cutting answers at that size (a page followed by a
  page with new events was cut short); then it is a warning.  Without proof
  (a relay holding just those few events looks the same) the second is still
  recorded, so nothing is silently lost, but reported at info level.

Every event is checked (shape, id, BIP-340 signature) and must match the
filter sent, because relays are untrusted.  A page that ends badly (CLOSED,
the connection lost, no EOSE in time) still yields the valid events it
brought before that; then the error is raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import attrs

from protocols.marmot.errors import InvalidEvent
from protocols.marmot.relays.activity import Happening, Reporter
from protocols.marmot.relays.connection import RelayConnection, SubscriptionClosed
from protocols.marmot.relays.filters import Filter, matches, matches_any
from protocols.marmot.relays.links import LinkDown
from protocols.marmot.relays.messages import EndOfStored
from protocols.marmot.wire.nostr import verify_event


@attrs.define
class Tally:
    """What one relay did during a fetch or a subscription: pages asked, events dropped, quirks seen."""

    relay: str
    report: Reporter
    max_event_bytes: int
    pages: int = 0
    invalid: int = 0
    unwanted: int = 0
    crowded_seconds: list[int] = attrs.Factory(list)
    exclusive_until: bool = False  # revealed by this walk
    exclusive_until_known: bool = False  # known before it began (ask for until + 1 at once)

    def admit(self, raw: object, sent: Sequence[Filter]) -> dict[str, Any] | None:
        """``raw`` as an event if it is valid and matches one of ``sent``; else count and report it, and return None."""
        try:
            if not isinstance(raw, dict):
                raise InvalidEvent(f"an event must be a JSON object, not {type(raw).__name__}", reason="shape")
            verify_event(raw, max_bytes=self.max_event_bytes)
        except InvalidEvent as bad:
            self.invalid += 1
            self.report(self.relay, Happening.INVALID_EVENT, str(bad))
            return None
        if not matches_any(sent, raw):
            self.unwanted += 1
            self.report(self.relay, Happening.UNWANTED_EVENT, f"event {raw['id']} matches no filter sent")
            return None
        return raw


async def fetch_page(
    connection: RelayConnection, sent: Filter, tally: Tally, timeout_s: float, page: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One REQ: the admitted events up to EOSE, appended to ``page`` as they come (and returned).

    Raises ``TimeoutError`` without EOSE in ``timeout_s``, and
    :class:`~protocols.marmot.relays.connection.SubscriptionClosed` or
    :class:`~protocols.marmot.relays.links.LinkDown` as the relay ends it;
    ``page`` then holds what came before.
    """
    tally.pages += 1
    async with connection.subscription([sent]) as subscription, asyncio.timeout(timeout_s):
        while True:
            message = await subscription.next()
            if isinstance(message, EndOfStored):
                return page
            event = tally.admit(message.event, [sent])
            if event is not None:
                page.append(event)


@attrs.define
class _Walk:
    """Where a backwards walk stands: the newest second still to read, and how to ask the relay for it."""

    bound: int | None
    bound_seen: bool
    shift: int = 0  # 1 once the relay is known to treat until as exclusive
    largest_page: int = 0  # the most events one page brought: the relay's cap, as far as we can tell
    previous_page: int = 0  # the size of the last answer, proven cut short if the next page brings new events
    proven_cap: int | None = None  # the smallest answer proven cut short
    unproven: list[tuple[int, int]] = attrs.Factory(list)  # (second, page size) recorded as crowded without proof
    # The caller's own until, before the relay's reading of until is known: ask one second more
    # (an exclusive relay then returns exactly the wanted seconds; an inclusive one's extra is dropped).
    over_ask: bool = False

    def sent(self, wanted: Filter, page_size: int) -> Filter:
        until = None if self.bound is None else self.bound + (1 if self.shift or self.over_ask else 0)
        return wanted.window(until=until, limit=page_size)


async def page_backwards(
    connection: RelayConnection,
    wanted: Filter,
    tally: Tally,
    *,
    page_size: int,
    timeout_s: float,
    seen: set[str],
    bound_seen: bool = False,
    largest_page: int = 0,
) -> AsyncIterator[dict[str, Any]]:
    """Yield every event of ``wanted`` the relay holds that is not in ``seen``, newest pages first.

    ``seen`` collects the ids met (the caller may share it between walks over
    one connection).  ``bound_seen`` says events at ``wanted.until`` were
    already met, which lets the first page reveal an exclusive ``until``;
    ``largest_page`` is the size of an earlier answer from the same relay, a
    hint at its cap.
    Stops after ``wanted.limit`` events when that is set.
    """
    known = tally.exclusive_until_known or tally.exclusive_until
    over_ask = wanted.until is not None and not bound_seen and not known
    walk = _Walk(
        wanted.until,
        bound_seen,
        shift=int(known),
        largest_page=largest_page,
        previous_page=largest_page,
        over_ask=over_ask,
    )
    try:
        async for event in _walk_pages(connection, wanted, tally, walk, page_size, timeout_s, seen):
            yield event
    finally:
        _report_unproven(walk, tally)


async def _walk_pages(
    connection: RelayConnection,
    wanted: Filter,
    tally: Tally,
    walk: _Walk,
    page_size: int,
    timeout_s: float,
    seen: set[str],
) -> AsyncIterator[dict[str, Any]]:
    wanted_count = wanted.limit
    page_size = min(page_size, wanted_count) if wanted_count else page_size
    yielded = 0
    while True:
        page: list[dict[str, Any]] = []
        try:
            await fetch_page(connection, walk.sent(wanted, page_size), tally, timeout_s, page)
        except (SubscriptionClosed, LinkDown, TimeoutError):
            # Cut short: what came before is as valid as a complete page (the caller reports the failure).
            for event in _unseen_matching(wanted, page, seen, wanted_count, yielded):
                yield event
            raise
        walk.over_ask = False
        if _reveals_exclusive_until(walk, page):
            walk.shift = 1
            tally.exclusive_until = True
            tally.report(tally.relay, Happening.EXCLUSIVE_UNTIL, "asking for until + 1 from now on")
            continue
        fresh = [event for event in page if event["id"] not in seen]
        seen.update(event["id"] for event in page)
        if fresh and walk.previous_page and walk.bound is not None:
            walk.proven_cap = min(walk.proven_cap or walk.previous_page, walk.previous_page)
        walk.previous_page = len(page)
        for event in fresh:
            if matches(wanted, event) and (wanted_count is None or yielded < wanted_count):
                yielded += 1
                yield event
        if wanted_count is not None and yielded >= wanted_count:
            return
        full = len(page) >= page_size or 0 < walk.largest_page <= len(page)
        proven = len(page) >= page_size or (walk.proven_cap is not None and len(page) >= walk.proven_cap)
        walk.largest_page = max(walk.largest_page, len(page))
        if not _step(walk, wanted, page, fresh, full, proven, tally):
            return


def _unseen_matching(
    wanted: Filter, page: list[dict[str, Any]], seen: set[str], wanted_count: int | None, yielded: int
) -> list[dict[str, Any]]:
    """The events of a page cut short to hand on: new, matching ``wanted``, within its ``limit``."""
    fresh = [event for event in page if event["id"] not in seen and matches(wanted, event)]
    seen.update(event["id"] for event in fresh)
    return fresh if wanted_count is None else fresh[: max(wanted_count - yielded, 0)]


def _reveals_exclusive_until(walk: _Walk, page: list[dict[str, Any]]) -> bool:
    """Whether a page that had to repeat the boundary second (inclusive until) did not."""
    if walk.shift or walk.bound is None or not walk.bound_seen:
        return False
    return all(event["created_at"] != walk.bound for event in page)


def _step(
    walk: _Walk,
    wanted: Filter,
    page: list[dict[str, Any]],
    fresh: list[dict[str, Any]],
    full: bool,
    proven: bool,
    tally: Tally,
) -> bool:
    """Move the walk below what ``page`` covered; False when the relay has nothing more.

    ``full`` says the page was as large as any before it, so it may have been cut off;
    ``proven`` that the relay is known to cut answers at this size.
    """
    if fresh:
        walk.bound = min(event["created_at"] for event in page)
        walk.bound_seen = True
        return True
    if not page or walk.bound is None or any(event["created_at"] != walk.bound for event in page):
        return False
    # Only already-seen events of one second: go on below it.  If the page was full, the relay may
    # hold more of that second than it will ever show with until alone.
    if full:
        tally.crowded_seconds.append(walk.bound)
        if proven:
            _report_crowded(tally, walk.bound, len(page))
        else:
            walk.unproven.append((walk.bound, len(page)))
    walk.bound -= 1
    walk.bound_seen = False
    return walk.bound >= (wanted.since or 0)


def _report_crowded(tally: Tally, second: int, size: int) -> None:
    detail = f"a full page ({size}) of created_at {second}; some events of that second may be missing"
    tally.report(tally.relay, Happening.CROWDED_SECOND, detail)


def _report_unproven(walk: _Walk, tally: Tally) -> None:
    """Report the seconds recorded as crowded without proof, now that the walk has shown what it could."""
    for second, size in walk.unproven:
        if walk.proven_cap is not None and size >= walk.proven_cap:
            _report_crowded(tally, second, size)
        else:
            detail = (
                f"a page of {size} seen event(s), all of created_at {second}, and no sign the relay cuts answers "
                f"at {size}; if it does, some events of that second may be missing"
            )
            tally.report(tally.relay, Happening.POSSIBLY_CROWDED, detail)
