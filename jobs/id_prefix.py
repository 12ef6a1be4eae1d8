"""Ids given by a unique prefix, as git takes commit ids: one resolver, each kind of id its own query.

Listings print short ids (``fc20244edd11``); every command that takes an id
accepts any prefix of at least :data:`MIN_PREFIX` hex characters that names
exactly one item, and the whole id of course.  The plugin (or the core
command) that owns the ids passes a :data:`Lookup`: a parameterised query
over an index range (``id >= ? AND id < ?``), never ``LIKE``, so a prefix
costs one index seek on a large table.  :class:`IdRange` gives the bounds
for ids stored as lowercase hex text and for ids stored as bytes.

A prefix that matches nothing raises :class:`NoSuchId`, one that matches
several :class:`AmbiguousId`; both name the command that lists the ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from core.errors import InvalidInput, NotFound

#: The fewest hex characters a prefix may have: shorter ones match too much to be worth a lookup.
MIN_PREFIX = 4
#: How many matches an ambiguous prefix names (one more is read to know there are more).
SHOWN_MATCHES = 3
_HEX = frozenset("0123456789abcdef")
# Longer than any id stored as bytes (group ids, event ids: 16 to 64 bytes): the upper bound of an all-ff prefix.
_MAX_ID_BYTES = 256


class NoSuchId(NotFound):
    """No item's id starts with the prefix given."""


class AmbiguousId(InvalidInput):
    """More than one item's id starts with the prefix given."""


@attrs.frozen
class IdRange:
    """The half-open range of ids that start with a hex ``prefix``, for ``WHERE id >= ? AND id < ?``.

    Attributes:
        prefix: the prefix, lowercase hex.
    """

    prefix: str

    @property
    def text(self) -> tuple[str, str]:
        """Bounds for ids stored as lowercase hex TEXT: every id starting with the prefix sorts below the prefix
        with its last character moved one code point up (``fc2f`` -> ``fc2g``), and nothing else does."""
        return self.prefix, self.prefix[:-1] + chr(ord(self.prefix[-1]) + 1)

    @property
    def bytes(self) -> tuple[bytes, bytes]:
        """Bounds for ids stored as BLOBs (compared bytewise, the order of their hex); an odd-length prefix
        covers both nibbles of its last byte."""
        odd = len(self.prefix) % 2
        low = bytes.fromhex(self.prefix + "0" * odd)
        top = bytearray(bytes.fromhex(self.prefix + "f" * odd))
        while top and top[-1] == 0xFF:
            top.pop()
        if not top:  # ff...: nothing is above it but longer runs of ff
            return low, b"\xff" * _MAX_ID_BYTES
        top[-1] += 1
        return low, bytes(top)


#: ``lookup(ids, limit)``: at most ``limit`` whole ids (as hex) in the range, in id order.
Lookup = Callable[[IdRange, int], Sequence[str]]


def prefix_of(value: str, noun: str, *, length: int | None = None) -> IdRange:
    """``value`` checked as a hex prefix of a ``noun`` id (``length``: the whole id's hex length, if fixed)."""
    text = value.strip().lower()
    longest = length or 2 * _MAX_ID_BYTES
    if not text or any(c not in _HEX for c in text) or len(text) > longest:
        raise InvalidInput(f"{value!r:.80} is not a {noun} id: give its hex, or at least {MIN_PREFIX} characters of it")
    if len(text) < MIN_PREFIX:
        raise InvalidInput(f"{text} is too short to name a {noun}: give at least {MIN_PREFIX} hex characters")
    return IdRange(text)


def resolve(value: str, noun: str, lookup: Lookup, listed_by: str, *, length: int | None = None) -> str:
    """The one whole ``noun`` id that starts with ``value`` (a whole id, of ``length`` characters, as it is).

    ``listed_by`` is the command (without backticks) that lists these ids; the errors name it.
    Raises :class:`InvalidInput` for what is not a prefix, :class:`NoSuchId`, :class:`AmbiguousId`.
    """
    wanted = prefix_of(value, noun, length=length)
    if length is not None and len(wanted.prefix) == length:
        return wanted.prefix  # a whole id names itself: whether it exists is for the command to say
    found = list(lookup(wanted, SHOWN_MATCHES + 1))
    if not found:
        raise NoSuchId(f"no {noun} id starts with {wanted.prefix}; `{listed_by}` lists them")
    if len(found) > 1:
        shown = ", ".join(f"{match[:16]}…" for match in found[:SHOWN_MATCHES])
        more = ", …" if len(found) > SHOWN_MATCHES else ""
        raise AmbiguousId(f"{wanted.prefix} is ambiguous: {noun} ids {shown}{more} start with it; give more characters")
    return found[0]
