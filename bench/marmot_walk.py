"""The walk of one commit through the Marmot plugin: which files it visits, in order, and how often it comes back.

    python bench/marmot_walk.py [--keep DIR] [--calls]

Two members (two databases, one shared in-memory relay): alice creates a
group and invites bob, bob accepts, both settle.  Then alice makes a
``self_update``; her tick publishes the commit, bob's sync fetches it, and
bob's tick processes it.  Only that one item on bob is traced: from the
pipeline's ``process_item`` call that carries the commit to its return
(decoding, the handler, the state write, the projectors).

The walk is the sequence of files under ``protocols/marmot/`` that calls
enter, consecutive repeats collapsed.  Calls inside ``wire/`` or inside
``relays/`` are that room's internals: only the call that enters the room
from outside is recorded (under the file it enters).  A *return* is a step
into a file the walk visited before, after it had been in another file.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from common import Workdir, console, parser

from core.app import App, open_app
from core.clock import ManualClock
from core.plugins import make_plugin_manager
from core.settings import Settings
from jobs.tick import TickDaemon
from protocols import marmot
from protocols.marmot.member import MarmotMember
from protocols.marmot.relays import MemoryRelays
from protocols.marmot.transport import sync as relay_sync

PLUGIN = Path(marmot.__file__).resolve().parent
RELAY = "ws://relay.walk"
SEALED_ROOMS = ("wire", "relays")  # rooms whose internal calls are not part of the walk


def plugin_file(filename: str) -> str | None:
    """``filename`` relative to the plugin folder, or None when it is not the plugin's."""
    try:
        return Path(filename).resolve().relative_to(PLUGIN).as_posix()
    except ValueError:
        return None


def room(path: str) -> str | None:
    first = path.split("/", 1)[0]
    return first if first in SEALED_ROOMS and "/" in path else None


class Walk:
    """Records the plugin files one traced item's calls enter."""

    def __init__(self, carries: Callable[[bytes], bool]) -> None:
        self.carries = carries
        self.item_frame: FrameType | None = None
        self.calls: list[tuple[str, str]] = []  # (file, function) of every recorded call

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and self.item_frame is None:
            if frame.f_code.co_name == "process_item" and frame.f_code.co_filename.endswith("core/pipeline.py"):
                item = frame.f_locals.get("item")
                if item is not None and self.carries(bytes(item.blob)):
                    self.item_frame = frame
            return
        if event == "return" and frame is self.item_frame:
            self.item_frame = None
            return
        if event != "call" or self.item_frame is None:
            return
        path = plugin_file(frame.f_code.co_filename)
        if path is None:
            return
        inner = room(path)
        caller = frame.f_back
        caller_path = plugin_file(caller.f_code.co_filename) if caller is not None else None
        if inner is not None and caller_path is not None and room(caller_path) == inner:
            return  # inside a sealed room: its internals
        self.calls.append((path, frame.f_code.co_name))

    def files(self) -> list[str]:
        """The walk: the files entered, consecutive repeats collapsed."""
        walk: list[str] = []
        for path, _ in self.calls:
            if not walk or walk[-1] != path:
                walk.append(path)
        return walk


def returns(walk: list[str]) -> int:
    """Steps into a file visited earlier in the walk (the walk has no consecutive repeats)."""
    return sum(1 for i, path in enumerate(walk) if path in walk[:i])


def open_member(work: Workdir, name: str, clock: ManualClock) -> App:
    plugins = make_plugin_manager([marmot], entry_points=False)
    return open_app(Settings.load(env={}), plugins, enable=["marmot"], create=True, clock=clock, path=work.db(name))


def tick(*apps: App) -> None:
    for app in apps:
        TickDaemon(app, mode="until_idle").run()


def pump(*apps: App) -> None:
    """Publish, fetch and process until quiet."""
    for _ in range(3):
        tick(*apps)
        for app in apps:
            relay_sync.sync(app)
        tick(*apps)


def trace_commit(work: Workdir) -> Walk:
    clock = ManualClock()
    alice, bob = open_member(work, "alice", clock), open_member(work, "bob", clock)
    relays = MemoryRelays([RELAY])
    for app in (alice, bob):
        app.service(MarmotMember).use_relays(relays)
    pubkeys = {}
    for name, app in (("alice", alice), ("bob", bob)):
        created = app.runtime.run_command("marmot.identity_new", {})
        pubkeys[name] = created.events[0].data["pubkey"]
        app.runtime.run_command("marmot.key_package_publish", {"relays": [RELAY], "count": 2})
    tick(alice, bob)
    gid = alice.runtime.run_command("marmot.create_group", {"relays": [RELAY]}).events[0].partition_key
    [package] = relays.fetch({"kinds": [30443], "authors": [pubkeys["bob"]], "limit": 1}, [RELAY]).events
    alice.runtime.run_command("marmot.invite", {"group": gid, "key_package_events": [json.dumps(package)]})
    pump(alice, bob)
    welcome = bob.db.value("SELECT welcome_id FROM marmot_welcomes")
    bob.runtime.run_command("marmot.accept", {"welcome": welcome})
    clock.advance(1000)
    pump(alice, bob)

    clock.advance(1000)
    published = alice.runtime.run_command("marmot.self_update", {"group": gid})
    commit_id = published.events[0].data["outer_id"]
    tick(alice)  # to the relay (and applied on alice once it holds it)
    relay_sync.sync(bob)
    walk = Walk(lambda blob: commit_id.encode() in blob)
    sys.setprofile(walk.profile)
    try:
        tick(bob)
    finally:
        sys.setprofile(None)
    epochs = {name: app.db.value("SELECT epoch FROM marmot_groups") for name, app in (("alice", alice), ("bob", bob))}
    if epochs["alice"] != epochs["bob"] or not walk.calls:
        raise SystemExit(f"the commit did not reach bob as expected: epochs {epochs}, {len(walk.calls)} calls")
    alice.close()
    bob.close()
    return walk


def main() -> None:
    options = parser(__doc__ or "", ("--width", 110, "characters per printed path line"))
    options.add_argument("--calls", action="store_true", help="also print every recorded call (file: function)")
    args = options.parse_args()
    os.environ.setdefault("TESSERA_MARMOT_STATE_KEY", "77" * 32)
    with Workdir(args.keep) as work:
        walk = trace_commit(work)
    files = walk.files()
    console.print(f"files visited: {len(set(files))}")
    console.print(f"returns to a file it had left: {returns(files)}")
    console.print(f"steps: {len(files)}")
    console.print("path:")
    line = ""
    for step, path in enumerate(files):
        text = path if step == 0 else f" → {path}"
        if line and len(line) + len(text) > args.width:
            console.print(line, highlight=False)
            line = "  " + text.lstrip()
        else:
            line += text
    console.print(line, highlight=False)
    if args.calls:
        for path, function in walk.calls:
            console.print(f"  {path}: {function}", highlight=False)


if __name__ == "__main__":
    main()
