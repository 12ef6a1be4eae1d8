"""Times for people: readable UTC and ages, from the raw milliseconds ``--json`` keeps."""

from __future__ import annotations

import datetime as dt

_UNITS = ((86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1_000, "s"))


def utc(ms: int) -> str:
    """``ms`` since the epoch as ``2026-11-29 05:40:01 UTC``."""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(ms: int) -> str:
    """A span in its largest whole unit and the next one: ``1 h 5 min``, ``42 s``, ``250 ms``."""
    ms = abs(ms)
    if ms < 1_000:
        return f"{ms} ms"
    for index, (size, unit) in enumerate(_UNITS):
        if ms >= size:
            whole, rest = divmod(ms, size)
            if index + 1 < len(_UNITS) and rest >= _UNITS[index + 1][0]:
                smaller, name = _UNITS[index + 1]
                return f"{whole} {unit} {rest // smaller} {name}"
            return f"{whole} {unit}"
    raise AssertionError("unreachable: the last unit is one second")


def relative(ms: int, now_ms: int) -> str:
    """``in 12 s`` or ``3 min ago``, from ``now_ms``."""
    return f"in {duration(ms - now_ms)}" if ms > now_ms else f"{duration(now_ms - ms)} ago"


def moment(ms: int, now_ms: int) -> str:
    """``2026-11-29 05:40:01 UTC (3 min ago)``."""
    return f"{utc(ms)} ({relative(ms, now_ms)})"
