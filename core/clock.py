"""Time in integer milliseconds, injectable for tests."""

from __future__ import annotations

import time
from typing import Protocol

import attrs


class Clock(Protocol):
    """Where the core reads the time: the system clock, or a test's manual one."""

    def now_ms(self) -> int: ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


@attrs.define
class ManualClock:
    """A clock tests move by hand."""

    now: int = 1_700_000_000_000

    def now_ms(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms
