"""Generate a realistic example stream: several authors, rooms, deletes, noise."""

from __future__ import annotations

import random

import nacl.signing

from core.encoding import dumps
from protocols.example import wire


def generate(
    messages: int,
    *,
    rooms: int = 3,
    authors: int = 4,
    seed: int = 0,
    duplicates: float = 0.05,
    garbage: float = 0.01,
    deletes: float = 0.05,
    start_ms: int = 1_700_000_000_000,
) -> list[bytes]:
    """Wire blobs in a plausible delivery order.

    Timestamps advance in bursts so many messages share one millisecond; some
    deletes are delivered before the post they remove; some blobs repeat and
    a few are garbage or wrongly signed.
    """
    rng = random.Random(seed)
    keys = [nacl.signing.SigningKey(rng.randbytes(32)) for _ in range(authors)]
    out: list[bytes] = []
    held: list[bytes] = []
    ts = start_ms
    for n in range(messages):
        ts += rng.choice((0, 0, 1, 7, 250))
        room, key = f"room-{rng.randrange(rooms)}", rng.choice(keys)
        post = wire.sign(wire.POST, room, f"message {n} in {room}", ts, key)
        if rng.random() < deletes:
            target = wire.parse(post)["id"]
            out.append(wire.sign(wire.DELETE, room, target, ts + 1, key))  # delete before its post
            held.append(post)
        else:
            out.append(post)
        if held and rng.random() < 0.3:
            out.append(held.pop(0))
        if rng.random() < duplicates:
            out.append(rng.choice(out))
        if rng.random() < garbage:
            out.append(_garbage(rng, post))
    return out + held


def _garbage(rng: random.Random, valid: bytes) -> bytes:
    if rng.random() < 0.5:
        return b"{not json " + rng.randbytes(8).hex().encode()
    message = wire.parse(valid)
    message["sig"] = ("0" if message["sig"][0] != "0" else "1") + message["sig"][1:]
    return dumps(message)
