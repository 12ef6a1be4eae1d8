"""The walks of the protocols, traced at run time: which files each journey enters, in order, and how often
it comes back to one it had left.

    python bench/walks.py [--journey NAME ...] [--json] [--calls] [--keep DIR]

Journeys (each on fresh databases; only the journey itself is traced, not its setting up):

``marmot-message``  one Marmot kind-445 application message, on the receiving member: his ``listen``
                    taking it from the relay into ``incoming`` (``transport/sync.py``), then the tick's
                    step that processes it, to the history row in ``marmot_messages`` and the commit.
``marmot-commit``   one Marmot commit (a member's ``self_update``), the same way; the walk
                    ``bench/marmot_walk.py`` used to trace (now this journey).
``xmtp-send``       one XMTP message intent on the sender, one of three members: ``tessera xmtp send
                    --no-publish`` (the CLI's command function), then one tick pass, whose publish job
                    makes it PUBLISHED and whose sync job reads it back, COMMITTED.
``server-send``     ``tessera serve`` (in this process, on 127.0.0.1): one client's ``send`` frame read by
                    its session, the store's write on a store thread, the hub's fan-out, to the frame
                    queued on the recipient's connection.

For each: the files visited, split into core, library and plugin; the plugin part of the walk (the
issue-33 aim: at most 8 files and 8 returns); the write transactions committed; and for ``xmtp-send``
the transactions from ``send`` to PUBLISHED (aim: at most 2).  ``bench/walk_trace.py`` says how calls
are recorded.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from types import FrameType
from typing import Any

import click
from common import Workdir, console, parser
from walk_trace import Probe, Segment, Tracer, summary

import core
from core import keys
from core.app import App, open_app
from core.clock import ManualClock
from core.plugins import make_plugin_manager
from core.settings import Settings
from jobs.outcome import Outcome
from jobs.tick import DaemonMode, TickDaemon

#: The checkout the walks are traced in: where ``core`` was imported from (bench/common.py puts this
#: script's own checkout first on the path; to trace another tree, run a copy of the two scripts there).
ROOT = Path(core.__file__).resolve().parent.parent
RELAY = "ws://relay.walk"
#: How long a new listener must hear nothing before the traced event is sent (its relays' replay is over).
QUIET_S = 0.5
#: The issue-33 aims for each journey's plugin part, and for one XMTP intent's transactions to PUBLISHED.
AIM_FILES, AIM_RETURNS, AIM_PUBLISHED_TRANSACTIONS = 8, 8, 2


class Journeys:
    """The setting for every journey: a work folder, one key file for its databases, one clock."""

    def __init__(self, work: Workdir):
        self.work = work
        key_file = str(work.path / "walk.key")
        if not os.path.exists(key_file):
            keys.write_new_key_file(key_file)
        self.settings = Settings.load(env={}, key_file=key_file)
        self.clock = ManualClock(1_700_000_000_000)

    def open(self, plugin: object, protocol: str, name: str) -> App:
        plugins = make_plugin_manager([plugin], entry_points=False)
        return open_app(
            self.settings, plugins, enable=[protocol], create=True, clock=self.clock, path=self.work.db(name)
        )


@contextmanager
def traced(tracer: Tracer, *, this_thread: bool = True, new_threads: bool = False) -> Iterator[Tracer]:
    """Profile this thread, and with ``new_threads`` the threads started meanwhile, into ``tracer`` while the
    block runs."""
    tracer.armed = True
    if new_threads:
        threading.setprofile(tracer.profile)
    if this_thread:
        sys.setprofile(tracer.profile)
    try:
        yield tracer
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        tracer.armed = False


def tick(*apps: App, mode: DaemonMode = DaemonMode.UNTIL_IDLE) -> None:
    for app in apps:
        TickDaemon(app, mode=mode).run()


def carrying(marker: str) -> Callable[[FrameType], bool]:
    """A test of ``process_item``'s frame: the item's blob holds ``marker``."""
    needle = marker.encode()

    def test(frame: FrameType) -> bool:
        item = frame.f_locals.get("item")
        return item is not None and needle in bytes(item.blob)

    return test


def tick_steps(marker: str) -> Segment:
    """The tick's steps that processed the item carrying ``marker`` (each from its read to its commit),
    without the other items of their batches."""
    test = carrying(marker)
    return Segment(
        Probe("core/drain.py", "step"),
        requires=Probe("core/pipeline.py", "process_item", test),
        skip=Probe("core/pipeline.py", "process_item", lambda frame: not test(frame)),
    )


# --- Marmot ---------------------------------------------------------------------------------------------


class MarmotPair:
    """Alice and Bob in one Marmot group over one in-memory relay, both settled."""

    def __init__(self, journeys: Journeys):
        from protocols import marmot
        from protocols.marmot.member import MarmotMember
        from protocols.marmot.relays import MemoryRelays
        from protocols.marmot.transport import sync as relay_sync

        self.sync = relay_sync.sync
        self.clock = journeys.clock
        self.alice, self.bob = journeys.open(marmot, "marmot", "alice"), journeys.open(marmot, "marmot", "bob")
        self.relays = MemoryRelays([RELAY])
        for app in (self.alice, self.bob):
            app.service(MarmotMember).use_relays(self.relays)
        self.gid = self._seat()

    def _seat(self) -> str:
        alice, bob = self.alice, self.bob
        pubkeys = {}
        for name, app in (("alice", alice), ("bob", bob)):
            pubkeys[name] = app.runtime.run_command("marmot.identity_new", {}).events[0].data["pubkey"]
            app.runtime.run_command("marmot.key_package_publish", {"relays": [RELAY], "count": 2})
        tick(alice, bob)
        gid = alice.runtime.run_command("marmot.create_group", {"relays": [RELAY]}).events[0].partition_key
        [package] = self.relays.fetch({"kinds": [30443], "authors": [pubkeys["bob"]], "limit": 1}, [RELAY]).events
        alice.runtime.run_command("marmot.invite", {"group": gid, "key_package_events": [json.dumps(package)]})
        self.pump()
        bob.runtime.run_command("marmot.accept", {"welcome": bob.db.value("SELECT welcome_id FROM marmot_welcomes")})
        self.clock.advance(1000)
        self.pump()
        self.clock.advance(1000)
        return gid

    def pump(self) -> None:
        """Publish, fetch and process until quiet."""
        for _ in range(3):
            tick(self.alice, self.bob)
            for app in (self.alice, self.bob):
                self.sync(app)
            tick(self.alice, self.bob)

    def trace_on_bob(self, outer_id: str) -> Tracer:
        """Alice's event ``outer_id`` (queued on her side), traced on bob: his live subscription handing it over
        (``tessera marmot listen``), then his tick."""
        from protocols.marmot.transport import sync as relay_sync

        def handing_over(frame: FrameType) -> bool:
            return any(event.get("id") == outer_id for event in frame.f_locals.get("events") or ())

        relay_side = Segment(Probe("protocols/marmot/transport/sync.py", "_queue_live", handing_over))
        tracer = Tracer(ROOT, [relay_side, tick_steps(outer_id)])
        heard, stop = threading.Event(), threading.Event()
        last_heard = [time.monotonic()]

        def on_event(event: dict[str, Any]) -> None:
            last_heard[0] = time.monotonic()
            if event.get("id") == outer_id:
                heard.set()

        listening = threading.Thread(
            target=relay_sync.listen, args=(self.bob, stop), kwargs={"on_event": on_event}, name="marmot-listen"
        )
        with traced(tracer, this_thread=False, new_threads=True):  # the listener's thread, not alice's tick
            listening.start()  # bob's database is the listener's until it stops
            try:
                # What the relays replay to a new subscription is handed over first, on its own.
                while time.monotonic() - last_heard[0] < QUIET_S:
                    time.sleep(QUIET_S / 4)
                tick(self.alice)  # her event to the relay, and from there live to bob
                heard.wait(10)
            finally:
                stop.set()
                listening.join(10)
        with traced(tracer):
            tick(self.bob)
        if not heard.is_set():
            raise SystemExit(f"bob's listener never heard event {outer_id}")
        return tracer

    def close(self) -> None:
        self.alice.close()
        self.bob.close()


def marmot_message(journeys: Journeys) -> dict[str, Any]:
    pair = MarmotPair(journeys)
    try:
        sent = pair.alice.runtime.run_command("marmot.send", {"group": pair.gid, "text": "one message"})
        tracer = pair.trace_on_bob(sent.events[0].data["outer_id"])
        rows = pair.bob.db.value("SELECT count(*) FROM marmot_messages WHERE content = 'one message'")
        return {**summary(tracer), "complete": rows == 1, "end": f"{rows} history row on bob"}
    finally:
        pair.close()


def marmot_commit(journeys: Journeys) -> dict[str, Any]:
    pair = MarmotPair(journeys)
    try:
        published = pair.alice.runtime.run_command("marmot.self_update", {"group": pair.gid})
        tracer = pair.trace_on_bob(published.events[0].data["outer_id"])
        epochs = [app.db.value("SELECT epoch FROM marmot_groups") for app in (pair.alice, pair.bob)]
        return {**summary(tracer), "complete": epochs[0] == epochs[1], "end": f"epochs (alice, bob) {epochs}"}
    finally:
        pair.close()


# --- XMTP -----------------------------------------------------------------------------------------------


class XmtpGroup:
    """Alice, Bob and Carol in one XMTP group, each on a database of their own, over one loopback service."""

    def __init__(self, journeys: Journeys):
        from protocols import xmtp
        from protocols.xmtp.transport.loopback import LoopbackHub

        self.hub = LoopbackHub()
        self.members = [self._member(journeys.open(xmtp, "xmtp", name)) for name in ("alice", "bob", "carol")]
        self.group = os.urandom(16)
        alice = self.members[0]
        alice.runtime.run_command("xmtp.create_group", {"group_id": self.group.hex()})
        for invitee in self.members[1:]:
            self._join(alice, invitee)

    def _member(self, app: App) -> App:
        from protocols.xmtp import keypackages
        from protocols.xmtp.connection import XmtpMember
        from protocols.xmtp.state import Vault

        app.runtime.run_command("xmtp.identity_new", {"server": "loopback"})
        with app.db.read():
            installation = Vault.of(app.db).identity().installation_id
        member = app.service(XmtpMember)
        member.use(self.hub.connect(installation))
        keypackages.register(app.runtime, member.delivery())
        return app

    def _join(self, inviter: App, invitee: App) -> None:
        from protocols.xmtp.state import Vault

        with invitee.db.read():
            address = Vault.of(invitee.db).identity().address
        inviter.runtime.run_command("xmtp.add_members", {"group": self.group.hex(), "addresses": [address]})
        tick(*self.members)  # the commit out and back (COMMITTED), then its welcome out
        tick(*self.members)
        invitee.runtime.run_command("xmtp.accept", {"group": self.group.hex()})
        tick(*self.members)

    def intent_states(self, app: App) -> list[str]:
        from protocols.xmtp import queries

        with app.db.read():
            return [row.state.name for row in queries.intents(app.db)]

    def close(self) -> None:
        for app in self.members:
            app.close()


def cli_send(app: App, group: bytes, text: str) -> None:
    """``tessera xmtp send --group G TEXT --no-publish`` on ``app``: the command function the CLI runs."""
    from jobs.cli import CliState
    from protocols.xmtp.cli import send

    state = CliState(app.db.settings, None)
    state._app = app  # the CLI's state, holding this database already open (as after its first `obj.app()`)
    with click.Context(send, obj=state) as ctx, redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        try:  # what it prints is not the walk
            ctx.invoke(send, group=group.hex(), texts=(text,), no_publish=True)
        except SystemExit as queued:  # --no-publish leaves the intent queued: exit 5 (jobs/outcome.py)
            if queued.code != Outcome.QUEUED.exit_code:
                raise


def xmtp_send(journeys: Journeys) -> dict[str, Any]:
    xmtp_group = XmtpGroup(journeys)
    alice = xmtp_group.members[0]
    try:
        before = len(xmtp_group.intent_states(alice))
        tracer = Tracer(
            ROOT,
            [
                Segment(Probe("protocols/xmtp/cli.py", "send")),
                Segment(Probe("protocols/xmtp/jobs.py", "_publish")),
                Segment(Probe("protocols/xmtp/jobs.py", "_sync")),
            ],
            [("PUBLISHED", Probe("protocols/xmtp/jobs.py", "_publish"), lambda: xmtp_group.intent_states(alice)[-1])],
        )
        with traced(tracer):
            cli_send(alice, xmtp_group.group, "one message")
            tick(alice, mode=DaemonMode.ONCE)
        states = xmtp_group.intent_states(alice)
        complete = len(states) == before + 1 and states[-1] == "COMMITTED"
        return {**summary(tracer), "complete": complete, "end": f"the intent {states[-1]}"}
    finally:
        xmtp_group.close()


# --- tessera serve --------------------------------------------------------------------------------------


class ServerThread:
    """``tessera serve`` on 127.0.0.1 (a port of its own) in a thread with its own event loop."""

    def __init__(self, db_path: str, settings: Settings):
        from protocols import sovereign
        from protocols.sovereign.config import ServerConfig
        from protocols.sovereign.server.runner import SovereignServer

        pm = make_plugin_manager([sovereign], entry_points=False)
        self.server = SovereignServer(db_path, settings, ServerConfig(port=0), pm=pm, readers=1, run_tick=False)
        self.listening = threading.Event()
        self.failure: BaseException | None = None
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, name="serve-loop", daemon=True)

    def _serve(self) -> None:
        try:
            self.loop.run_until_complete(self.server.start())
        except BaseException as exc:
            self.failure = exc
            raise
        finally:
            self.listening.set()
        self.loop.run_until_complete(self.server.wait_stopped())

    def __enter__(self) -> ServerThread:
        self.thread.start()
        self.listening.wait(30)
        if self.failure is not None:
            raise SystemExit(f"tessera serve did not start: {self.failure}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.server.request_stop)
        self.thread.join(30)


def server_send(journeys: Journeys) -> dict[str, Any]:
    import nacl.signing

    from protocols import sovereign

    app = journeys.open(sovereign, "sovereign", "server")  # the server's database, made as `tessera init` would
    db_path = app.db.path
    app.close()
    sender, recipient = nacl.signing.SigningKey.generate(), nacl.signing.SigningKey.generate()
    recipient_id = recipient.verify_key.encode().hex()

    def sending(frame: FrameType) -> bool:
        raw = frame.f_locals.get("raw")
        return isinstance(raw, str | bytes) and b'"send"' in (raw.encode() if isinstance(raw, str) else raw)

    def to_recipient(frame: FrameType) -> bool:
        return getattr(frame.f_locals.get("self"), "installation", None) == recipient_id

    session = "protocols/sovereign/server/session.py"
    request = Segment(Probe(session, "_dispatch", sending), end=Probe(session, "push", to_recipient), threads=True)
    tracer = Tracer(ROOT, [request])
    with traced(tracer, this_thread=False, new_threads=True):  # the server's threads, not the clients'
        tracer.armed = False  # they are profiled from their start; only the send is recorded
        with ServerThread(db_path, journeys.settings) as serving:
            pushed = asyncio.run(_send_one(serving.server.url, sender, recipient, tracer))
    return {**summary(tracer), "complete": pushed, "end": "pushed to the recipient" if pushed else "not pushed"}


async def _send_one(url: str, sender: Any, recipient: Any, tracer: Tracer) -> bool:
    """``sender`` and ``recipient`` in one group (a welcome taken and acked), then one message traced from the
    sender's ``send`` to the recipient's push; whether it arrived."""
    from protocols.libraries.delivery.client import connect
    from protocols.libraries.delivery.records import WELCOME
    from tests.sovereign.server_helpers import new_group_id, private_message, welcome  # MLS-shaped payloads

    group = new_group_id()
    async with await connect(url, sender, timeout=30) as alice, await connect(url, recipient, timeout=30) as bob:
        await alice.join(group)
        await alice.send(group, welcome(), recipient=bob.installation)
        await bob.join(group)
        joined = await bob.receive(timeout=10)
        assert joined.message_type == WELCOME
        await bob.ack([joined.id])
        tracer.armed = True
        receipt = await alice.send(group, private_message(group))
        message = await bob.receive(timeout=10)
        tracer.armed = False
        return message.id == receipt.message_id


JOURNEYS: dict[str, Callable[[Journeys], dict[str, Any]]] = {
    "marmot-message": marmot_message,
    "marmot-commit": marmot_commit,
    "xmtp-send": xmtp_send,
    "server-send": server_send,
}


def run(names: list[str], keep: str | None = None) -> dict[str, dict[str, Any]]:
    """The figures of each journey named (see the module docs), by name."""
    with Workdir(keep) as work:
        journeys = Journeys(work)
        return {name: JOURNEYS[name](journeys) for name in names}


def show(name: str, found: dict[str, Any], width: int, calls: bool) -> None:
    plugin = found["plugin"]
    kinds = found["files_by_kind"]
    met = plugin["files"] <= AIM_FILES and plugin["returns"] <= AIM_RETURNS
    console.print(f"[bold]{name}[/]: {'complete' if found['complete'] else 'INCOMPLETE'} ({found['end']})")
    console.print(
        f"  files visited {found['files']} (core {kinds['core']}, library {kinds['library']}, plugin {kinds['plugin']}),"
        f" {found['steps']} steps, {found['returns']} returns; write transactions {found['transactions']}"
    )
    console.print(
        f"  plugin part: {plugin['files']} files, {plugin['returns']} returns"
        f" (aim ≤ {AIM_FILES} files and ≤ {AIM_RETURNS} returns: {'met' if met else 'not met'})"
    )
    for milestone, figures in found["milestones"].items():
        within = figures["transactions"] <= AIM_PUBLISHED_TRANSACTIONS
        console.print(
            f"  to {milestone} ({figures['seen']}): {figures['transactions']} write transactions"
            f" (aim ≤ {AIM_PUBLISHED_TRANSACTIONS}: {'met' if within else 'not met'})"
        )
    print_path("  walk", found["walk"], width)
    print_path("  plugin walk", plugin["walk"], width)
    if calls:
        for call in found["calls"]:
            console.print(f"    {call}", highlight=False)


def print_path(title: str, walk: list[str], width: int) -> None:
    console.print(f"{title}:")
    line = "   "
    for step, path in enumerate(walk):
        text = f" {path}" if step == 0 else f" → {path}"
        if len(line) + len(text) > width:
            console.print(line, highlight=False)
            line = "     " + text.lstrip()
        else:
            line += text
    console.print(line, highlight=False)


def main() -> None:
    options = parser(__doc__ or "", ("--width", 140, "characters per printed path line"))
    options.add_argument("--journey", action="append", choices=sorted(JOURNEYS), help="trace only these")
    options.add_argument("--json", action="store_true", help="print the figures as JSON")
    options.add_argument("--calls", action="store_true", help="also print every recorded call (file:function)")
    args = options.parse_args()
    found = run(args.journey or list(JOURNEYS), args.keep)
    if args.json:
        print(json.dumps(found, indent=2))
        return
    for name, figures in found.items():
        show(name, figures, args.width, args.calls)


if __name__ == "__main__":
    main()
