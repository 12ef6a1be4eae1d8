"""NIP-01 filters: checked once on the way in, then matched against events by one function.

The same :func:`matches` decides what the in-memory relays return and which
events the client keeps from a real relay's answer, so the loopback cannot
drift from the check that guards us against untrusted relays.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from protocols.marmot.relays.errors import InvalidFilter

_HEX64 = re.compile(r"[0-9a-f]{64}")
_TAG_KEY = re.compile(r"#[A-Za-z]")
_PLAIN_KEYS = frozenset({"ids", "authors", "kinds", "since", "until", "limit"})
MAX_KIND = 65535
# Marks a window() bound left as it is (None already means "no bound").
_KEEP: Any = object()


@attrs.frozen
class Filter:
    """One NIP-01 filter.  ``None`` means "any"; every given condition must hold.

    Attributes:
        ids: event ids (64 lowercase hex) to match, or None.
        authors: pubkeys (64 lowercase hex) to match, or None.
        kinds: kinds to match, or None.
        tags: ``(letter, values)`` pairs, sorted by letter: the event needs a
            tag named ``letter`` whose first value is one of ``values``.
        since: oldest ``created_at`` to match (inclusive), or None.
        until: newest ``created_at`` to match (inclusive), or None.
        limit: how many of the newest matching events are wanted, or None for all.
    """

    ids: frozenset[str] | None = None
    authors: frozenset[str] | None = None
    kinds: frozenset[int] | None = None
    tags: tuple[tuple[str, frozenset[str]], ...] = ()
    since: int | None = None
    until: int | None = None
    limit: int | None = None

    def to_wire(self) -> dict[str, Any]:
        """The filter as the JSON object a REQ carries (lists sorted, so equal filters send equal text)."""
        wire: dict[str, Any] = {}
        for key in ("ids", "authors", "kinds"):
            values = getattr(self, key)
            if values is not None:
                wire[key] = sorted(values)
        for letter, values in self.tags:
            wire[f"#{letter}"] = sorted(values)
        for key in ("since", "until", "limit"):
            value = getattr(self, key)
            if value is not None:
                wire[key] = value
        return wire

    def window(self, *, since: int | None = _KEEP, until: int | None = _KEEP, limit: int | None = _KEEP) -> Filter:
        """A copy with ``since``, ``until`` and/or ``limit`` replaced (the paging knobs); None removes one."""
        return Filter(
            self.ids,
            self.authors,
            self.kinds,
            self.tags,
            self.since if since is _KEEP else since,
            self.until if until is _KEEP else until,
            self.limit if limit is _KEEP else limit,
        )


#: What the public API takes for a filter: a checked :class:`Filter`, or a NIP-01 JSON-style mapping.
FilterLike = Filter | Mapping[str, Any]


def matches(filter_: Filter, event: Mapping[str, Any]) -> bool:
    """Whether a well-formed event satisfies every condition of ``filter_`` (``limit`` is not a condition)."""
    created_at = event["created_at"]
    if filter_.since is not None and created_at < filter_.since:
        return False
    if filter_.until is not None and created_at > filter_.until:
        return False
    if filter_.kinds is not None and event["kind"] not in filter_.kinds:
        return False
    if filter_.authors is not None and event["pubkey"] not in filter_.authors:
        return False
    if filter_.ids is not None and event["id"] not in filter_.ids:
        return False
    return all(_has_tag(event["tags"], letter, values) for letter, values in filter_.tags)


def _has_tag(tags: Iterable[list[str]], letter: str, values: frozenset[str]) -> bool:
    return any(len(tag) >= 2 and tag[0] == letter and tag[1] in values for tag in tags)


def matches_any(filters: Iterable[Filter], event: Mapping[str, Any]) -> bool:
    """Whether ``event`` satisfies at least one of ``filters`` (how a REQ with several filters is read)."""
    return any(matches(filter_, event) for filter_ in filters)


# --- parsing -----------------------------------------------------------------


def _refuse(key: str, problem: str) -> InvalidFilter:
    return InvalidFilter(f"filter key {key!r} {problem}")


def _string_set(key: str, value: object, pattern: re.Pattern[str] | None) -> frozenset[str]:
    if not isinstance(value, (list, tuple, set, frozenset)) or not value:
        raise _refuse(key, "must be a non-empty list (leave the key out to match anything)")
    for item in value:
        if not isinstance(item, str) or (pattern is not None and pattern.fullmatch(item) is None):
            expected = "64 lowercase hex characters" if pattern is not None else "a string"
            raise _refuse(key, f"holds {item!r:.80}; each value must be {expected}")
    return frozenset(value)


def _kind_set(value: object) -> frozenset[int]:
    if not isinstance(value, (list, tuple, set, frozenset)) or not value:
        raise _refuse("kinds", "must be a non-empty list (leave the key out to match any kind)")
    for item in value:
        if type(item) is not int or not 0 <= item <= MAX_KIND:
            raise _refuse("kinds", f"holds {item!r:.40}; each kind must be an integer from 0 to {MAX_KIND}")
    return frozenset(value)


def _count(key: str, value: object) -> int:
    if type(value) is not int or value < 0:
        raise _refuse(key, f"is {value!r:.40}; it must be a non-negative integer")
    return value


def parse_filter(raw: FilterLike) -> Filter:
    """Check a NIP-01 filter given as a mapping (or pass a :class:`Filter` through); raise :class:`InvalidFilter`.

    Accepted keys: ``ids``, ``authors``, ``kinds``, ``#`` plus one letter,
    ``since``, ``until`` and ``limit``.  Empty lists and ``since > until`` are
    refused: they match nothing, which is almost always a mistake.
    """
    if isinstance(raw, Filter):
        return raw
    if not isinstance(raw, Mapping):
        raise InvalidFilter(f"a filter must be a mapping like {{'kinds': [445]}}, not {type(raw).__name__}")
    unknown = sorted(str(key) for key in raw if key not in _PLAIN_KEYS and not _TAG_KEY.fullmatch(str(key)))
    if unknown:
        raise InvalidFilter(
            f"unknown filter keys {unknown}; use ids, authors, kinds, since, until, limit or #<one letter>"
        )
    fields: dict[str, Any] = {}
    if "ids" in raw:
        fields["ids"] = _string_set("ids", raw["ids"], _HEX64)
    if "authors" in raw:
        fields["authors"] = _string_set("authors", raw["authors"], _HEX64)
    if "kinds" in raw:
        fields["kinds"] = _kind_set(raw["kinds"])
    for key in ("since", "until", "limit"):
        if key in raw:
            fields[key] = _count(key, raw[key])
    tags = [(key[1], _string_set(key, raw[key], None)) for key in raw if _TAG_KEY.fullmatch(key)]
    fields["tags"] = tuple(sorted(tags))
    since, until = fields.get("since"), fields.get("until")
    if since is not None and until is not None and since > until:
        raise InvalidFilter(f"filter has since {since} after until {until}, so it can match nothing")
    return Filter(**fields)


def parse_filters(raw: FilterLike | Iterable[FilterLike]) -> tuple[Filter, ...]:
    """Check every filter of a request; at least one is needed."""
    if isinstance(raw, (Mapping, Filter)):
        raw = [raw]
    filters = tuple(parse_filter(one) for one in raw)
    if not filters:
        raise InvalidFilter("no filters were given; pass at least one, e.g. {'kinds': [445]}")
    return filters
