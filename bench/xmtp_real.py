"""The XMTP plugin's node profile against libxmtp itself, in the same run: catching up on libxmtp's history,
and adding members one commit at a time (issue 36, point 7).

    python -m bench xmtp-real [--quick]
    python bench/xmtp_real.py [--messages N] [--members M] [--profile]

Everything goes through one ``tessera serve --xmtp-port`` process on an encrypted database; the libxmtp
clients are libxmtp v1.10.0 (``xmtp-bindings==0.1.8``), each in its own process
(tests/xmtp_node/libxmtp_peer.py); the Tessera member runs in this process on an encrypted database, through
the tick's own sync pass.

* **Catch-up.** alice (libxmtp) makes a group with carol (libxmtp) and the Tessera member, then sends N texts
  (10,000; 500 with ``--quick``; generated once and read by both). carol has the group (its welcome) but has
  not synced it: timed, its ``sync`` of the group and ``find_messages``.  Two Tessera members accepted the
  group before the texts were sent: timed, one sync pass each (``tessera xmtp sync``'s work), one with the
  decrypt-ahead helper (the default) and one without.  All must end with N texts.  Target: our rate (with
  the helper) at least libxmtp's.
* **Adds.** M-1 inboxes (99; 9 with ``--quick``) registered on the node, each with a KeyPackage in
  libxmtp's form.  The Tessera member makes a group and adds them one commit each (an ``add-members``
  intent per inbox, published and read back COMMITTED before the next); alice does the same with
  libxmtp's ``add_members`` of one inbox in a group of her own.  Both groups end with M members.
  Figures: commits/s, no target (recorded).

``--profile`` runs Tessera's catch-up and adds under cProfile: the catch-up's time by stage, then both by
function.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from suite import Figure, Run

MESSAGES, QUICK_MESSAGES = 10_000, 500
MEMBERS, QUICK_MEMBERS = 100, 10
#: libxmtp sends from this many clients at once while the history is generated (the clients' CPU is the limit).
SENDERS = 2
TARGET_OF_LIBXMTP = 1.0


@attrs.frozen
class Timed:
    """What one reader or committer did and how long it took."""

    count: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.count / self.seconds


@attrs.frozen
class Measured:
    """One run's figures: the catch-up both ways and the adds both ways."""

    messages: int
    members: int
    ours_catch_up: Timed
    ours_alone_catch_up: Timed
    libxmtp_catch_up: Timed
    ours_adds: Timed
    libxmtp_adds: Timed
    generating: Timed


@contextmanager
def world(folder: Path) -> Iterator[tuple[str, Callable[[str], Any], Callable[..., Any]]]:
    """A fresh ``tessera serve --xmtp-port`` node; its URL, a maker of libxmtp clients and one of Tessera members."""
    from common import open_bench_app

    from core.settings import Settings
    from protocols import xmtp
    from protocols.xmtp.settings import DECRYPT_AHEAD
    from tests.helpers import TEST_KEY_FILE
    from tests.xmtp.node_member import NodeMember
    from tests.xmtp_node.libxmtp_peer import client_factory, install
    from tests.xmtp_node.node_process import new_node

    folder.mkdir(parents=True, exist_ok=True)
    made: list[Any] = []
    with new_node(folder) as node:
        make_client, close_all = client_factory(install(), folder / "clients")

        def tessera(*, decrypt_ahead: bool = True) -> NodeMember:
            env = {} if decrypt_ahead else {DECRYPT_AHEAD.env_key: "0"}
            settings = Settings.load(env=env, key_file=TEST_KEY_FILE, slow_statement_ms=60_000)
            app = open_bench_app(str(folder / f"tessera-{len(made)}.db"), xmtp, "xmtp", settings)
            made.append(app)
            return NodeMember.create(app, node.url)

        try:
            yield node.url, make_client, tessera
        finally:
            close_all()
            for app in made:
                app.close()


def generate(alice: Any, others: list[Any], group: str, count: int) -> Timed:
    """``count`` texts into ``group``, from alice and ``others`` at once (each sends its share in order)."""
    from concurrent.futures import ThreadPoolExecutor

    senders = [alice, *others]

    def send_share(index: int) -> int:
        sender = senders[index]
        for number in range(index, count, len(senders)):
            sender.send_text(group, f"text {number}")
        return len(range(index, count, len(senders)))

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(senders)) as pool:
        sent = sum(pool.map(send_share, range(len(senders))))
    return Timed(sent, time.perf_counter() - started)


def measure_catch_up(
    url: str,
    make_client: Callable[[str], Any],
    tessera: Callable[..., Any],
    count: int,
    profile: cProfile.Profile | None,
) -> tuple[Timed, Timed, Timed, Timed]:
    """(ours, ours without the decrypt-ahead helper, libxmtp's, the generation): the readers on the same
    ``count`` texts alice and bob sent."""
    alice, bob, carol = (make_client(name).create(url) for name in ("alice", "bob", "carol"))
    ours, alone = tessera(), tessera(decrypt_ahead=False)
    invited = [bob.inbox_id, carol.inbox_id, ours.inbox_id, alone.inbox_id]
    group = alice.call("create_group", members=invited, name="catch-up")
    for member in (bob, carol):
        member.call("sync_welcomes")
    bob.call("sync_group", group_id=group)
    for tessera_member in (ours, alone):
        tessera_member.sync()
        tessera_member.accept(group)
    generating = generate(alice, [bob][: SENDERS - 1], group, count)

    started = time.perf_counter()
    carol.call("sync_group", group_id=group)
    listed = carol.call("message_count", group_id=group)
    theirs = Timed(count, time.perf_counter() - started)

    started = time.perf_counter()
    read_alone = alone.sync()
    without_helper = Timed(count, time.perf_counter() - started)

    started = time.perf_counter()
    if profile is not None:
        profile.enable()
    report = ours.sync()
    if profile is not None:
        profile.disable()
    mine = Timed(count, time.perf_counter() - started)
    read, read_without = len(ours.texts(group)), len(alone.texts(group))
    if read != count or read_without != count or listed < count or report.failures or read_alone.failures:
        raise RuntimeError(
            f"catch-up: Tessera read {read} texts ({read_without} without the helper), libxmtp listed {listed}, "
            f"of {count}: {report}"
        )
    return mine, without_helper, theirs, generating


def measure_adds(
    url: str,
    make_client: Callable[[str], Any],
    tessera: Callable[..., Any],
    members: int,
    profile: cProfile.Profile | None = None,
) -> tuple[Timed, Timed]:
    """(ours, libxmtp's): commits/s adding ``members`` - 1 inboxes one commit each to a new group."""
    from protocols.libraries.xmtp_mls import Installation, XmtpNode

    with XmtpNode(url) as node:
        inboxes = [Installation.new() for _ in range(members - 1)]
        for inbox in inboxes:
            inbox.register(node)
    ours = tessera()
    group = ours.create_group(name="adds")
    started = time.perf_counter()
    if profile is not None:
        profile.enable()
    for inbox in inboxes:
        ours.add_members(group, inbox.account.address)
        ours.publish()
        ours.sync()
    ours.publish()  # the last commit's welcomes
    if profile is not None:
        profile.disable()
    mine = Timed(len(inboxes), time.perf_counter() - started)
    if ours.open_intents() or len(ours.members(group)) != members:
        raise RuntimeError(f"adds: Tessera's group has {len(ours.members(group))} members, open: {ours.open_intents()}")

    alice = make_client("dave").create(url)
    theirs_group = alice.call("create_group", members=[], name="adds")
    started = time.perf_counter()
    for inbox in inboxes:
        alice.call("add_members", group_id=theirs_group, inbox_ids=[inbox.inbox_id])
    theirs = Timed(len(inboxes), time.perf_counter() - started)
    listed = len(alice.call("members", group_id=theirs_group))
    if listed != members:
        raise RuntimeError(f"adds: libxmtp's group has {listed} members, not {members}")
    return mine, theirs


def measure(
    messages: int,
    members: int,
    folder: Path,
    profile: cProfile.Profile | None = None,
    adds_profile: cProfile.Profile | None = None,
) -> Measured:
    with world(folder) as (url, make_client, tessera):
        ours, alone, theirs, generating = measure_catch_up(url, make_client, tessera, messages, profile)
        ours_adds, theirs_adds = measure_adds(url, make_client, tessera, members, adds_profile)
    return Measured(messages, members, ours, alone, theirs, ours_adds, theirs_adds, generating)


def figures_of(runs: list[Measured]) -> list[Figure]:
    """The median of ``runs`` of each figure (each run's ours beside its own libxmtp)."""
    first = runs[0]
    rounds = f"median of {len(runs)} runs" if len(runs) > 1 else "one run"

    def median(pick: Callable[[Measured], Timed]) -> float:
        return statistics.median(pick(run).rate for run in runs)

    generated = median(lambda run: run.generating)
    return [
        Figure(
            "xmtp-real",
            f"catch-up on {first.messages:,} texts libxmtp members sent, one sync pass ({rounds})",
            median(lambda run: run.ours_catch_up),
            "messages/s",
            median(lambda run: run.libxmtp_catch_up),
            "libxmtp v1.10.0's sync + find_messages of the same history",
            "ratio",
            TARGET_OF_LIBXMTP,
            note=f"history sent by {SENDERS} libxmtp clients at {generated:,.0f} messages/s",
        ),
        Figure(
            "xmtp-real",
            f"the same catch-up without the decrypt-ahead helper, TESSERA_XMTP_DECRYPT_AHEAD=0 ({rounds})",
            median(lambda run: run.ours_alone_catch_up),
            "messages/s",
            median(lambda run: run.libxmtp_catch_up),
            "libxmtp's",
        ),
        Figure(
            "xmtp-real",
            f"adds to a {first.members}-member group, one inbox per commit, built, published and read back ({rounds})",
            median(lambda run: run.ours_adds),
            "commits/s",
            median(lambda run: run.libxmtp_adds),
            "libxmtp v1.10.0's add_members of one inbox",
        ),
    ]


def figures(run: Run) -> list[Figure]:
    """For ``python -m bench``: 10,000 texts and a 100-member group (500 and 10 with ``--quick``)."""
    from tests._peers import PeerUnavailable

    quick = run.quick or run.events < 100_000
    messages, members = (QUICK_MESSAGES, QUICK_MEMBERS) if quick else (MESSAGES, MEMBERS)
    try:
        with tempfile.TemporaryDirectory() as folder:
            return figures_of([measure(messages, members, Path(folder))])
    except PeerUnavailable as missing:
        return [
            Figure("xmtp-real", "catch-up on libxmtp's history", 0.0, "messages/s", note=f"peer missing: {missing}")
        ]


#: The catch-up's stages, each the cumulative time of the functions named (file ending, function), outermost
#: first; a stage inside another (the MLS decryption inside the read) is taken out of it, so the shares add up.
STAGES: tuple[tuple[str, tuple[tuple[str, str], ...], str], ...] = (
    ("the whole sync pass", (("node_profile/sync.py", "sync_all"),), ""),
    ("node paging (gRPC call, protobuf decode)", (("transport/node.py", "group_messages_after"),), ""),
    ("waiting for the decrypt-ahead helper's page", (("concurrent/futures/_base.py", "result"),), ""),
    ("the helper seeded with the committed state", (("node_profile/ahead.py", "seed"),), ""),
    ("MLS: decrypt, verify, ratchet", (("mls/api.py", "process_message"),), "read"),
    (
        "xmtp_mls read beyond MLS (framing, content decode, sender's inbox)",
        (("xmtp_mls/groups.py", "read"),),
        "",
    ),
    ("group state opened from its sealed copy", (("node_profile/processing.py", "joined_group"),), ""),
    ("our intents looked up (is it ours?)", (("xmtp/intent_machine.py", "by_hash"),), ""),
    ("facts built (message recorded)", (("node_profile/processing.py", "_events"),), ""),
    ("events appended, projector rows", (("core/runtime.py", "apply"),), ""),
    ("COMMITs: state sealed, WAL synced, replaced state erased", (("core/batch.py", "commit"),), ""),
    ("the door and pipeline around the handler", (("core/door.py", "attempt"),), "handler"),
    ("the group message handler", (("node_profile/processing.py", "handle_group_message"),), ""),
)


def stage_seconds(stats: pstats.Stats) -> dict[str, float]:
    """Each stage's cumulative seconds (see :data:`STAGES`)."""
    table = stats.stats  # type: ignore[attr-defined]
    found: dict[str, float] = {}
    for stage, functions, _ in STAGES:
        found[stage] = sum(
            row[3]
            for (file, _, name), row in table.items()
            for ending, wanted in functions
            if name == wanted and file.endswith(ending)
        )
    return found


def print_profile(profile: cProfile.Profile, count: int, top: int) -> None:
    """The stages of the Tessera catch-up, in ms per message, then the functions by cumulative time."""
    from common import report

    stats = pstats.Stats(profile)
    seconds = stage_seconds(stats)
    read = seconds["xmtp_mls read beyond MLS (framing, content decode, sender's inbox)"]
    mls_seconds = seconds["MLS: decrypt, verify, ratchet"]
    door = seconds["the door and pipeline around the handler"]
    handler = seconds["the group message handler"]
    seconds["xmtp_mls read beyond MLS (framing, content decode, sender's inbox)"] = read - mls_seconds
    seconds["the door and pipeline around the handler"] = door - handler - seconds["events appended, projector rows"]
    seconds["the group message handler"] = (
        handler
        - read
        - seconds["group state opened from its sealed copy"]
        - seconds["our intents looked up (is it ours?)"]
        - seconds["facts built (message recorded)"]
    )
    whole = seconds.pop("the whole sync pass")
    parts = sum(seconds.values())
    rows = [(stage, f"{1000 * value / count:.3f}", f"{value / whole:.0%}") for stage, value in seconds.items()]
    rows.append(
        (
            "the rest (cursor moves, savepoints, batching, locks)",
            f"{1000 * (whole - parts) / count:.3f}",
            f"{(whole - parts) / whole:.0%}",
        )
    )
    rows.append(("the whole sync pass, under cProfile", f"{1000 * whole / count:.3f}", "100%"))
    report(f"Tessera's catch-up of {count:,} texts, by stage", rows, ("stage", "ms/message", "share"))
    stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=MESSAGES, help=f"texts in the history (default {MESSAGES:,})")
    parser.add_argument("--members", type=int, default=MEMBERS, help=f"members after the adds (default {MEMBERS})")
    parser.add_argument("--runs", type=int, default=1, help="runs (the figures are their medians)")
    parser.add_argument("--profile", action="store_true", help="profile the Tessera catch-up (cProfile)")
    parser.add_argument("--top", type=int, default=60, help="functions the profile shows")
    arguments = parser.parse_args()
    from suite import print_table

    runs = []
    for _ in range(arguments.runs):
        profile, adds_profile = (cProfile.Profile(), cProfile.Profile()) if arguments.profile else (None, None)
        with tempfile.TemporaryDirectory() as folder:
            runs.append(measure(arguments.messages, arguments.members, Path(folder), profile, adds_profile))
        print(attrs.asdict(runs[-1]))
        if profile is not None and adds_profile is not None:
            print_profile(profile, arguments.messages, arguments.top)
            print(f"Tessera's {arguments.members - 1} adds, one commit each:")
            pstats.Stats(adds_profile).sort_stats("cumulative").print_stats(arguments.top)
    print_table(figures_of(runs), "the node profile against libxmtp v1.10.0, same run")


if __name__ == "__main__":
    main()
