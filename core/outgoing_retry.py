"""When a failed outgoing message is tried again, and when it is given up on.

A transport says what kind of failure it met: a :class:`~core.errors.PermanentError`
(the relay refused the message for good) parks the message at once; a
:class:`~core.errors.TransientError` (relay or node down, a timeout) is retried
with exponential backoff and jitter, capped at ``retry_max_ms``, until
``outgoing_retry_horizon_ms`` has passed since the message was queued, however
many attempts that takes: an outage of a night dead-letters nothing.  Anything
else a transport raises is a bug in it, retried ``max_attempts`` times like a
failing incoming item.  The rule is the core's, so it holds for every plugin.
"""

from __future__ import annotations

import enum
import random

from core.errors import PermanentError, TransientError
from core.settings import Settings

# Jitter keeps many databases that lost the same relay from all retrying in the same instant.
_JITTER = random.Random()


class Verdict(enum.Enum):
    RETRY = "retry"
    PARK = "park"


def verdict(settings: Settings, error: Exception, attempts: int, queued_at_ms: int, now_ms: int) -> Verdict:
    """Retry or park an outgoing message that just failed its ``attempts``-th try (1-based)."""
    if isinstance(error, PermanentError):
        return Verdict.PARK
    if isinstance(error, TransientError):
        return Verdict.PARK if now_ms - queued_at_ms >= settings.outgoing_retry_horizon_ms else Verdict.RETRY
    return Verdict.PARK if attempts >= settings.max_attempts else Verdict.RETRY


def next_attempt_ms(settings: Settings, attempts: int, queued_at_ms: int, now_ms: int) -> int:
    """When to try again after the ``attempts``-th failure: half the capped doubling delay plus up to as much
    again at random, and never past the horizon (the last try falls on it, so parking is on time)."""
    delay = settings.retry_delay_ms(attempts)
    jittered = delay - delay // 2 + _JITTER.randint(0, delay // 2)
    return min(now_ms + max(jittered, 1), max(queued_at_ms + settings.outgoing_retry_horizon_ms, now_ms + 1))
