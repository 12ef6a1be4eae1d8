"""The flat roster: a list of leaves, some blank, in place of a ratchet tree.

Leaf ``i`` of the roster is leaf ``i`` of the secret tree.  Removed members
leave a blank (``None``); trailing blanks are truncated; new members take
the leftmost blank or are appended, like RFC 9420 section 7.7.

The "tree hash" that goes into the GroupContext is, for this engine,
``RefHash("MLS 1.0 Tessera flat roster", roster encoding)`` where the roster
encoding is ``optional<LeafNode> leaves<V>`` with full leaf nodes (signatures
included).  Members agree on it exactly when they agree on the roster.
"""

from __future__ import annotations

from collections.abc import Iterator

from .credentials import LeafNode
from .labels import ref_hash
from .tls import Reader, Writer

Roster = tuple[LeafNode | None, ...]

TREE_HASH_LABEL = "MLS 1.0 Tessera flat roster"


def _write_optional_leaf(w: Writer, leaf: LeafNode | None) -> None:
    if leaf is None:
        w.u8(0)
    else:
        w.u8(1)
        leaf.encode_to(w)


def _read_optional_leaf(r: Reader) -> LeafNode | None:
    return LeafNode.decode_from(r) if r.boolean() else None


def encode_roster(roster: Roster) -> bytes:
    """``optional<LeafNode> leaves<V>``."""
    return Writer().vector(roster, _write_optional_leaf).bytes()


def decode_roster(r: Reader) -> Roster:
    """Read a roster; refuses trailing blanks (they would have been truncated)."""
    roster = tuple(r.vector(_read_optional_leaf))
    if roster and roster[-1] is None:
        raise r.fail("roster ends with a blank leaf")
    return roster


def tree_hash(roster: Roster) -> bytes:
    """The engine's tree hash: RefHash over the roster encoding."""
    return ref_hash(TREE_HASH_LABEL, encode_roster(roster))


def members(roster: Roster) -> Iterator[tuple[int, LeafNode]]:
    """``(leaf_index, leaf)`` for every non-blank leaf, in index order."""
    return ((i, leaf) for i, leaf in enumerate(roster) if leaf is not None)


def member_at(roster: Roster, index: int) -> LeafNode | None:
    """Leaf ``index``, or ``None`` when it is blank or beyond the roster's end."""
    return roster[index] if index < len(roster) else None


def find(roster: Roster, credential: str) -> int | None:
    """Leaf index of ``credential``, or ``None``."""
    return next((i for i, leaf in members(roster) if leaf.credential == credential), None)


def replace(roster: Roster, index: int, leaf: LeafNode) -> Roster:
    """Roster with leaf ``index`` replaced (an update)."""
    return (*roster[:index], leaf, *roster[index + 1 :])


def blank(roster: Roster, index: int) -> Roster:
    """Roster with leaf ``index`` removed (blanked), trailing blanks truncated."""
    out = [*list(roster[:index]), None, *list(roster[index + 1 :])]
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


def add(roster: Roster, leaf: LeafNode) -> tuple[Roster, int]:
    """Put ``leaf`` at the leftmost blank (or append); returns ``(roster, index)``."""
    index = next((i for i, slot in enumerate(roster) if slot is None), len(roster))
    if index == len(roster):
        return (*roster, leaf), index
    return replace(roster, index, leaf), index
