"""Retention at scale: how fast the store forgets, and how short its write transactions stay.

Fills a sovereign store with N messages (20 groups of 10 members, ~500-byte
payloads, so 9 delivery rows each), half of them 91 days old, then runs the
retention job once, then the scrub (core.scrub: the VACUUM that leaves no
purged byte in the file).  Reported: messages expired per second, the longest
expire transaction (target: at most 50 ms, so a server's writers never wait
long behind retention), the file before and after the incremental vacuum, and
how long the scrub held the write lock per megabyte of file.

The ceiling, in the same run on a copy of the same file: raw apsw deleting the
same rows (messages, deliveries, welcomes) and emptying the same event
payloads, in batches of the same size, with the same pragmas (secure_delete
on) — the work without the framework's checks, facts and projector dispatch.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import apsw
from rich.progress import Progress

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import Workdir, parser, report

from core import scrub
from core.app import open_app
from core.clock import ManualClock
from core.plugins import make_plugin_manager
from core.settings import Settings
from protocols import sovereign
from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.messages import MLSMessage, PrivateMessage
from protocols.libraries.mls.messages.framing import ContentType
from protocols.libraries.mls.messages.registries import CipherSuite, ProtocolVersion
from protocols.libraries.mls.messages.update_path import HPKECiphertext
from protocols.libraries.mls.messages.welcome import EncryptedGroupSecrets, Welcome
from protocols.sovereign import retention
from protocols.sovereign.config import Retention
from protocols.sovereign.ids import first_id_at
from protocols.sovereign.service import Store

DAY_MS = 86_400_000
GROUPS, MEMBERS = 20, 10
TARGET_TXN_MS = 50.0


def payload(group_id: str) -> bytes:
    """A ~500-byte PrivateMessage for ``group_id`` (random ciphertext: the store never opens it)."""
    inner = PrivateMessage(bytes.fromhex(group_id), 1, ContentType.APPLICATION, b"", os.urandom(16), os.urandom(420))
    return encode(MLSMessage(ProtocolVersion.MLS10, inner))


def welcome() -> bytes:
    """An MLS Welcome with random secrets (the store keeps it for the recipient the sender names)."""
    secrets = (EncryptedGroupSecrets(os.urandom(32), HPKECiphertext(os.urandom(32), os.urandom(48))),)
    inner = Welcome(CipherSuite.MLS_128_DHKEMX25519_AES128GCM_SHA256_ED25519, secrets, os.urandom(128))
    return encode(MLSMessage(ProtocolVersion.MLS10, inner))


def fill(path: str, count: int, clock: ManualClock) -> None:
    app = open_app(
        Settings.load(env={}),
        make_plugin_manager([sovereign], entry_points=False),
        enable=["sovereign"],
        create=True,
        path=path,
        clock=clock,
    )
    store = Store(app)
    groups = [os.urandom(16).hex() for _ in range(GROUPS)]
    members = {g: [os.urandom(32).hex() for _ in range(MEMBERS)] for g in groups}
    for group in groups:
        creator, *others = members[group]
        store.join(creator, group)
        for member in others:
            store.send(creator, group, welcome(), recipient=member)
            store.join(member, group)
    with Progress(transient=True) as progress:
        task = progress.add_task("filling", total=count)
        for n in range(count):
            if n == count // 2:
                clock.advance(60 * DAY_MS)  # the second half is 60 days younger
            group = groups[n % GROUPS]
            store.send(members[group][n % MEMBERS], group, payload(group))
            if n % 500 == 0:
                progress.update(task, completed=n)
    app.close()


def raw_expire(path: str, cutoff_s: int, batch: int) -> tuple[int, float, float]:
    """The same deletions with plain SQL: (messages, seconds, longest transaction ms)."""
    conn = apsw.Connection(path)
    conn.pragma("journal_mode", "wal")
    conn.pragma("synchronous", "NORMAL")
    conn.pragma("secure_delete", "ON")
    done, longest, started = 0, 0.0, time.perf_counter()
    while True:
        rows = conn.execute(
            "SELECT id, seq FROM sovereign_messages WHERE id < ? ORDER BY id LIMIT ?",
            (first_id_at(cutoff_s * 1000), batch),
        ).fetchall()
        if not rows:
            break
        began = time.perf_counter()
        with conn:
            conn.executemany("DELETE FROM sovereign_delivery_status WHERE message_id = ?", [(r[0],) for r in rows])
            conn.executemany("DELETE FROM sovereign_welcomes WHERE message_id = ?", [(r[0],) for r in rows])
            conn.executemany("DELETE FROM sovereign_messages WHERE id = ?", [(r[0],) for r in rows])
            conn.executemany("UPDATE events SET payload = X'', body = NULL WHERE seq = ?", [(r[1],) for r in rows])
        longest = max(longest, (time.perf_counter() - began) * 1000)
        done += len(rows)
    seconds = time.perf_counter() - started
    conn.close()
    return done, seconds, longest


def main() -> None:
    found = parser(__doc__, ("--messages", 50_000, "messages to store (half of them expire)"))
    found.add_argument("--quick", action="store_true", help="10,000 messages")
    args = found.parse_args()
    count = 10_000 if args.quick else args.messages
    with Workdir(args.keep) as work:
        path = work.db("store")
        clock = ManualClock(1_700_000_000_000)
        fill(path, count, clock)
        copy = work.db("raw")
        shutil.copy(path, copy)
        clock.advance(31 * DAY_MS)  # the older half is now 91 days old
        cutoff_s = clock.now_ms() // 1000 - 90 * 86_400
        raw_done, raw_s, raw_longest = raw_expire(copy, cutoff_s, 500)

        app = open_app(
            Settings.load(env={}),
            make_plugin_manager([sovereign], entry_points=False),
            enable=["sovereign"],
            path=path,
            clock=clock,
        )
        size_before = os.path.getsize(path)
        started = time.perf_counter()
        done = retention.run_once(app.runtime, Retention(retention_days=90, max_storage_mb=0, vacuum_interval_s=0))
        seconds = time.perf_counter() - started
        size_after = os.path.getsize(path)
        scrubbed = scrub.scrub(app.runtime)
        app.close()
        expired = done.expired_by_age
        report(
            f"retention of {expired:,} of {count:,} messages ({GROUPS} groups x {MEMBERS} members)",
            [
                ("raw apsw (ceiling)", f"{raw_done / raw_s:,.0f}", f"{raw_longest:.1f}", "-", "-"),
                (
                    "retention job",
                    f"{expired / seconds:,.0f}",
                    f"{done.longest_txn_ms:.1f}",
                    f"{expired / seconds / (raw_done / raw_s):.0%}",
                    "met" if done.longest_txn_ms <= TARGET_TXN_MS else "NOT met",
                ),
            ],
            ("path", "messages/s", "longest txn ms", "of ceiling", f"txn <= {TARGET_TXN_MS:.0f} ms"),
        )
        times = sorted(ms for _, ms in done.batch_times)
        print(
            f"expire transactions: p50 {times[len(times) // 2]:.1f} ms, p99 {times[int(len(times) * 0.99)]:.1f} ms; "
            f"slowest batches (messages, ms): {sorted(done.batch_times, key=lambda t: -t[1])[:3]}"
        )
        print(
            f"{done.batches} batches; file {size_before / 1e6:.1f} MB before, {size_after / 1e6:.1f} MB after "
            f"(incremental vacuum gave back {done.vacuumed_pages} pages)"
        )
        megabytes = scrubbed.bytes_before / 1e6
        print(
            f"scrub (VACUUM): held the write lock {scrubbed.took_ms:,.0f} ms for a {megabytes:.1f} MB file "
            f"({scrubbed.took_ms / megabytes:.1f} ms per MB), leaving {scrubbed.bytes_after / 1e6:.1f} MB"
        )


if __name__ == "__main__":
    main()
