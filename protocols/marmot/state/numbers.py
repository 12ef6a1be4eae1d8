"""Each group's number: a small integer that names the group in the keys of its processing records.

The records (:mod:`.seen`) take two or three keys per outer event, each led by the group; a number of a few
digits instead of the 64-hex group id makes every one of them 60 characters shorter, and with them the index
of ``protocol_state`` that every message adds to.  A group gets its number with its first record and keeps
it: ``group_no/<gid>`` holds it (decimal), ``group_no`` the next one to give.  Not sealed: the read models
name the group in the clear too.
"""

from __future__ import annotations

from core.intents import WriteProtocolState
from core.state import ProtocolState

NUMBER = "group_no/"
#: The number the next group gets (decimal; absent: 1).
NEXT = "group_no"
_MEMO = "marmot.group_no\0"


def number_name(gid: str) -> str:
    return NUMBER + gid


def of(state: ProtocolState, gid: str) -> int | None:
    """The number of group ``gid``, or None while it has no record (and so no number) yet.

    Read once per transaction (every message asks): a number found stays the group's, so the transaction's
    memo keeps it; a number not found yet is asked again (the transaction may give it)."""
    memo = state.db.memo
    found = memo.get(_MEMO + gid)
    if found is None:
        raw = state.get(number_name(gid))
        if raw is None:
            return None
        found = memo[_MEMO + gid] = int(raw)
    return int(found)


class Numbering:
    """The numbers of the groups one write names, given out in order (several new groups may share a write)."""

    def __init__(self, state: ProtocolState):
        self.state = state
        self.given: dict[str, int] = {}
        self._next: int | None = None

    def number(self, gid: str) -> int:
        """The number of ``gid``: its own, or the next free one (:meth:`writes` stores what was given)."""
        found = self.given.get(gid)
        if found is None:
            found = of(self.state, gid)
        if found is None:
            found = self._take()
            self.given[gid] = found
        return found

    def _take(self) -> int:
        if self._next is None:
            raw = self.state.get(NEXT)
            self._next = 1 if raw is None else int(raw)
        taken, self._next = self._next, self._next + 1
        return taken

    def writes(self) -> list[WriteProtocolState]:
        """The writes that keep the numbers given by this numbering (none when every group had one)."""
        if not self.given:
            return []
        assert self._next is not None
        kept = [WriteProtocolState(number_name(gid), str(number).encode()) for gid, number in self.given.items()]
        return [*kept, WriteProtocolState(NEXT, str(self._next).encode())]
