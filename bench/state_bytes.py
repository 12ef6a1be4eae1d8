"""What a message makes a member write: the whole group state against its ratchets, by group size.

    python bench/state_bytes.py [--sizes 2,10,100,1000] [--messages 50]

For each size a group is built as bench/mls.py builds it; bob reads ``--messages`` application messages
from alice, then the script prints the bytes and the encoding time of bob's whole snapshot (what was
written after every message before the state was split) and of its two parts: the epoch part, written
only when more than the ratchets changed, and the ratchets, written after every message
(protocols/libraries/mls/group/snapshot_split.py).  Sizes, not speeds, are the point: the bytes are exact.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import console
from mls import sizes
from mls_engine import _encrypt_all, build_group
from rich.table import Table

from protocols.libraries import mls
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.group.process import process


def ratchets_of_state(state: mls.GroupState) -> bytes:
    return mls.ratchets_bytes(mls.ratchets_of(state))


def encode_us(encode: Callable[[], bytes], rounds: int) -> float:
    """Microseconds per call of ``encode``, the best of three rounds."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(rounds):
            encode()
        best = min(best, (time.perf_counter() - started) / rounds)
    return best * 1e6


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--sizes", type=sizes, default=(2, 10, 100, 1000), help="group sizes")
    options.add_argument("--messages", type=int, default=50, help="messages bob reads before measuring")
    args = options.parse_args()
    cs = suite(1)
    table = Table(title=f"bob's group state after {args.messages} messages read, cipher suite 1")
    for column in ("members", "whole snapshot", "encode", "epoch part", "ratchets", "encode"):
        table.add_column(column, justify="right")
    for members in args.sizes:
        with console.status(f"building a {members:,}-member group") as status:
            group = build_group(cs, members, status.update)
        bob = group.bob
        for message in _encrypt_all(group.alice, args.messages, b"x" * 100):
            bob = process(bob, message).new_state
        rounds = 20 if members >= 1000 else 200
        whole, epoch_part = mls.snapshot(bob), mls.epoch_part(bob)
        ratchets = mls.ratchets_bytes(mls.ratchets_of(bob))
        table.add_row(
            f"{members:,}",
            f"{len(whole):,} B",
            f"{encode_us(partial(mls.snapshot, bob), rounds):,.0f} µs",
            f"{len(epoch_part):,} B",
            f"{len(ratchets):,} B",
            f"{encode_us(partial(ratchets_of_state, bob), 200):,.0f} µs",
        )
    console.print(table)


if __name__ == "__main__":
    main()
