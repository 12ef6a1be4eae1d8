"""The tracer behind ``bench/walks.py``: which of the checkout's files one journey's calls enter, in order.

A journey is made of *segments*.  A segment opens at a call that matches its ``start`` probe and closes at
the return of that same call, or, when it names an ``end`` probe, at the return of the first call that
matches ``end`` (so a segment may span threads: the server's request is read on the event loop, stored on
a store thread and pushed on the loop again).  A segment that names ``requires`` is kept only when a call
matching it happened inside (a tick step that processed the traced item, not an idle one).

While a segment is open, every call into a file of the checkout is recorded, except the calls a *sealed
room* makes to itself: inside a shared library (``protocols/libraries/<name>/``) or one of a plugin's
library-like rooms (Marmot's ``wire/`` and ``relays/``) only the call that enters the room from outside
counts, under the file it enters (a coroutine that an event loop starts counts as called from the room the
walk was last in).  A generator or coroutine resuming is no call.  The walk is the sequence of recorded files, consecutive repeats
collapsed; a *return* is a step into a file the walk visited before, after it had been in another.

Each file is core (``core/``, ``jobs/``, ``projectors/``, ``schema_loader/``: the framework), library
(``protocols/libraries/``; before the libraries had a folder, ``protocols/mls/`` and ``protocols/delivery/``)
or plugin (any other ``protocols/<name>/``).  The *plugin part* of a walk is its plugin files only,
consecutive repeats collapsed again, so a plugin function the core calls back into the file the plugin
was already in is no return.

The statement profiler and busy handler SQLite calls back into ``core/db.py`` are left out (instruments,
not steps).  Write transactions are counted where the core commits them: a call of ``Database._finish`` (the end of an
outermost transaction) on a transaction begun to write, without an exception.
"""

from __future__ import annotations

import dis
import inspect
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import attrs

#: Top-level folders of the framework.
CORE_ROOTS = ("core", "jobs", "projectors", "schema_loader")
#: The folder of the shared libraries, each a room of its own.
LIBRARIES = "protocols/libraries"
#: Libraries that lived beside the plugins before they had a folder of their own: each is one room.
OLD_LIBRARIES = ("protocols/mls", "protocols/delivery")
#: Callbacks SQLite makes after each statement or while it waits for a lock: the core's instruments, not
#: steps of a journey.
INSTRUMENTS = frozenset({("core/db.py", "_profile"), ("core/db.py", "_kind_of"), ("core/db.py", "_on_lock_wait")})
#: Rooms inside a plugin whose own calls among themselves are that room's internals.
PLUGIN_ROOMS = ("protocols/marmot/wire", "protocols/marmot/relays")


def kind_of(path: str) -> str | None:
    """``core``, ``library`` or ``plugin`` for a path relative to the checkout; None for anything else."""
    top = path.split("/", 1)[0]
    if top in CORE_ROOTS:
        return "core"
    if any(path.startswith(library + "/") for library in (LIBRARIES, *OLD_LIBRARIES)):
        return "library"
    if top == "protocols" and path.count("/") >= 2:
        return "plugin"
    return None


def room_of(path: str) -> str | None:
    """The sealed room ``path`` lies in, or None: a library's folder (or file), or a plugin's own room."""
    if path.startswith(LIBRARIES + "/"):
        first = path[len(LIBRARIES) + 1 :].split("/", 1)[0]
        return f"{LIBRARIES}/{first}"
    rooms = (*OLD_LIBRARIES, *PLUGIN_ROOMS)
    return next((room for room in rooms if path.startswith(room + "/")), None)


def always(frame: FrameType) -> bool:
    return True


@attrs.frozen
class Probe:
    """A function of one file (relative to the checkout), and a test of its frame (its arguments)."""

    path: str
    function: str
    when: Callable[[FrameType], bool] = always

    def matches(self, frame: FrameType, path: str) -> bool:
        return path == self.path and frame.f_code.co_name == self.function and self.when(frame)


@attrs.frozen
class Segment:
    """Part of a journey: from a call of ``start`` to its return, or to the return of ``end`` (see the module
    docs); kept only when ``requires`` was called inside, if given; calls of ``skip`` (another item of the
    same batch) are left out with everything they call.  Only the thread it opened on is recorded unless
    ``threads`` (a request the server hands from its event loop to a store thread and back)."""

    start: Probe
    end: Probe | None = None
    requires: Probe | None = None
    skip: Probe | None = None
    threads: bool = False


@attrs.frozen
class Call:
    """One recorded call: the file and function it entered, and the thread it ran on."""

    path: str
    function: str
    thread: str


@attrs.define
class Milestone:
    """Where a journey stood when a probe's call returned: steps recorded and transactions committed so far,
    and what ``check`` said then (e.g. the state of an intent)."""

    name: str
    calls: int
    transactions: int
    seen: Any = None


@attrs.define
class _Open:
    """The segment being recorded: its calls and commits held until it closes (and is kept or dropped)."""

    segment: Segment
    closing: FrameType | None
    thread: int
    calls: list[Call] = attrs.Factory(list)
    transactions: int = 0
    required_seen: bool = False
    skipping: FrameType | None = None
    last_room: str | None = None


class Tracer:
    """A profile function (``sys.setprofile`` / ``threading.setprofile``) recording a journey's segments.

    ``milestones`` map a name to a probe and a ``check``: the first return of a matching call inside a
    segment records a :class:`Milestone` (``check()`` runs then, untraced)."""

    def __init__(
        self,
        root: Path,
        segments: Sequence[Segment],
        milestones: Sequence[tuple[str, Probe, Callable[[], Any]]] = (),
    ):
        self.root = root.resolve()
        self.segments = tuple(segments)
        self.milestones = tuple(milestones)
        self.calls: list[Call] = []
        self.transactions = 0
        self.reached: dict[str, Milestone] = {}
        self.armed = False
        self._open: _Open | None = None
        self._paths: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def path(self, filename: str) -> str | None:
        """``filename`` relative to the checkout when it is one of the checkout's core, library or plugin files."""
        known = self._paths.get(filename, "")
        if known != "":
            return known
        try:
            relative: str | None = Path(filename).resolve().relative_to(self.root).as_posix()
        except ValueError:
            relative = None
        if relative is not None and kind_of(relative) is None:
            relative = None
        self._paths[filename] = relative
        return relative

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.armed or (event != "call" and event != "return"):
            return
        path = self.path(frame.f_code.co_filename)
        if path is None:
            return
        with self._lock:
            if event == "call":
                self._call(frame, path)
            else:
                self._return(frame, path)

    def _call(self, frame: FrameType, path: str) -> None:
        if _resumes(frame):
            return  # a generator or coroutine going on where it stopped: no new call
        current = self._open
        if current is None:
            segment = next((s for s in self.segments if s.start.matches(frame, path)), None)
            if segment is None:
                return
            closing = frame if segment.end is None else None
            current = self._open = _Open(segment, closing, threading.get_ident())
        if current.skipping is not None or not (current.segment.threads or current.thread == threading.get_ident()):
            return
        if (path, frame.f_code.co_name) in INSTRUMENTS:
            return
        segment = current.segment
        if current.closing is None and segment.end is not None and segment.end.matches(frame, path):
            current.closing = frame
        if segment.skip is not None and segment.skip.matches(frame, path):
            current.skipping = frame
            return
        if segment.requires is not None and segment.requires.matches(frame, path):
            current.required_seen = True
        if _commits_a_write(frame, path):
            current.transactions += 1
        room = room_of(path)
        if room is None or self._caller_room(frame, current) != room:
            current.calls.append(Call(path, frame.f_code.co_name, threading.current_thread().name))
        current.last_room = room

    def _caller_room(self, frame: FrameType, current: _Open) -> str | None:
        """The sealed room of the code that made this call (see the module docs).

        A call from outside the checkout (an event loop starting a coroutine, a C function calling back) is
        taken as made from the room the walk was last in."""
        caller = frame.f_back
        caller_path = None if caller is None else self.path(caller.f_code.co_filename)
        return current.last_room if caller_path is None else room_of(caller_path)

    def _return(self, frame: FrameType, path: str) -> None:
        current = self._open
        if current is None:
            return
        if current.skipping is not None or not (current.segment.threads or current.thread == threading.get_ident()):
            if frame is current.skipping:
                current.skipping = None
            return
        for name, probe, check in self.milestones:
            if name not in self.reached and probe.matches(frame, path):
                transactions = self.transactions + current.transactions
                self.reached[name] = Milestone(name, len(self.calls) + len(current.calls), transactions, check())
        if frame is current.closing:
            self._open = None
            if current.segment.requires is None or current.required_seen:
                self.calls.extend(current.calls)
                self.transactions += current.transactions

    def walk(self) -> list[str]:
        return collapse(call.path for call in self.calls)


def _commits_a_write(frame: FrameType, path: str) -> bool:
    if path != "core/db.py" or frame.f_code.co_name != "_finish":
        return False
    local = frame.f_locals
    db = local.get("self")
    return local.get("exc") is None and getattr(db, "_mode", None) == "write"


#: Code flags of functions whose frames are suspended and resumed (generators, coroutines).
_SUSPENDING = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
_STARTS: dict[CodeType, int] = {}


def _resumes(frame: FrameType) -> bool:
    """Whether this "call" event is a suspended generator or coroutine resuming (not its first start)."""
    code = frame.f_code
    if not code.co_flags & _SUSPENDING:
        return False
    start = _STARTS.get(code)
    if start is None:
        # The first RESUME of a code object is where every new frame starts; later ones follow a yield.
        start = _STARTS[code] = next((i.offset for i in dis.get_instructions(code) if i.opname == "RESUME"), 0)
    return frame.f_lasti > start


def collapse(paths: Any) -> list[str]:
    """``paths`` with consecutive repeats collapsed."""
    walk: list[str] = []
    for path in paths:
        if not walk or walk[-1] != path:
            walk.append(path)
    return walk


def returns(walk: Sequence[str]) -> int:
    """Steps into a file visited earlier in ``walk`` (which has no consecutive repeats)."""
    seen: set[str] = set()
    count = 0
    for path in walk:
        count += path in seen
        seen.add(path)
    return count


def summary(tracer: Tracer) -> dict[str, Any]:
    """The figures of one traced journey: its walk and its plugin part, files by kind, transactions."""
    walk = tracer.walk()
    plugin_walk = collapse(path for path in walk if kind_of(path) == "plugin")
    kinds = {kind: sorted({path for path in walk if kind_of(path) == kind}) for kind in ("core", "library", "plugin")}
    return {
        "steps": len(walk),
        "files": len(set(walk)),
        "returns": returns(walk),
        "files_by_kind": {kind: len(files) for kind, files in kinds.items()},
        "plugin": {"files": len(kinds["plugin"]), "returns": returns(plugin_walk), "walk": plugin_walk},
        "library_files": kinds["library"],
        "transactions": tracer.transactions,
        "milestones": {
            name: {"calls": m.calls, "transactions": m.transactions, "seen": m.seen}
            for name, m in tracer.reached.items()
        },
        "walk": walk,
        "calls": [f"{call.path}:{call.function}" for call in tracer.calls],
    }
