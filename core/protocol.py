"""What a plugin registers: its protocol, commands, jobs and transports."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, runtime_checkable
from typing import Protocol as TypingProtocol

import attrs

from core.errors import InvalidInput

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def _protocol_name(instance: Any, attribute: attrs.Attribute, value: str) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidInput(
            f"protocol name {value!r} must be 1-32 lowercase letters, digits or _ (starting with a letter)"
        )


@runtime_checkable
class ProjectorLike(TypingProtocol):
    """What the core needs of a projector (the full contract is ``projectors.Projector``)."""

    name: str
    protocol: str
    event_types: frozenset[str]
    tables: tuple[str, ...]
    rebuild_key: str | None
    isolate_failures: bool

    def apply(self, conn: Any, event: Any) -> None: ...


@attrs.frozen
class Command:
    """A named command run by ``run_command``.

    Attributes:
        fn: ``fn(ctx, params) -> Result``; pure unless ``manages_transactions``.
        manages_transactions: the command opens its own (per-item) transactions;
            the runner then opens none and applies nothing for it.
        description: one line for ``tessera plugins``.
    """

    fn: Callable[..., Any]
    manages_transactions: bool = False
    description: str = ""


@attrs.frozen
class Protocol:
    """A protocol plugin's registration.

    Attributes:
        name: protocol name (``[a-z][a-z0-9_]*``), also its schema owner name.
        package: importable package holding ``schema.sql`` (and ``migrations/``).
        decode: ``decode(blob: bytes) -> Envelope``; raise DecodeError on bad input.
        handlers: envelope type -> ``handler(ctx, envelope) -> Result | Blocked``.
        commands: command name -> :class:`Command` (run as ``<protocol>.<name>``).
        projectors: projectors of this protocol's events.
        upcasters: ``(event_type, version) -> fn(data) -> data`` at ``version + 1``.
        description: one line for ``tessera plugins``.
    """

    name: str = attrs.field(validator=_protocol_name)
    package: str
    decode: Callable[[bytes], Any]
    handlers: Mapping[str, Callable[..., Any]] = attrs.field(factory=dict)
    commands: Mapping[str, Command] = attrs.field(factory=dict)
    projectors: Sequence[ProjectorLike] = attrs.field(factory=tuple, converter=tuple)
    upcasters: Mapping[tuple[str, int], Callable[[Any], Any]] = attrs.field(factory=dict)
    description: str = ""


@attrs.define
class TickContext:
    """What a job gets from the tick: the runtime, the lease, a work budget.

    Attributes:
        runtime: the :class:`core.runtime.Runtime`.
        lease: the tick lease when held (pass it to fenced operations), else None.
        budget: units of work left in this pass (None = unbounded).
        outcomes: item outcomes counted by kind.
    """

    runtime: Any
    lease: Any = None
    budget: int | None = None
    outcomes: dict[str, int] = attrs.field(factory=dict)

    def has_budget(self) -> bool:
        return self.budget is None or self.budget > 0

    def spend(self, units: int = 1) -> None:
        if self.budget is not None:
            self.budget -= units

    def record(self, outcome: Any) -> None:
        """Count one processed item (and spend one unit of budget)."""
        self.outcomes[outcome.kind] = self.outcomes.get(outcome.kind, 0) + 1
        self.spend()


@attrs.frozen
class Job:
    """A unit of tick work.

    Attributes:
        name: unique job name.
        order: jobs run in ascending order within a pass.
        needs_lease: only the holder of the ``tick`` lease runs it.
        run: ``run(tick: TickContext) -> int``: how many units of work it did;
            it should stop when ``tick.has_budget()`` turns False.
        next_due_ms: optional ``fn(runtime) -> int | None``: when it will have
            work again (lets ``--until-idle`` wait for scheduled work).
    """

    name: str
    order: int
    run: Callable[..., int]
    needs_lease: bool = True
    next_due_ms: Callable[..., int | None] | None = None


class Transport(TypingProtocol):
    """Publishes outgoing wire messages.

    ``send(runtime, item)`` gets a :class:`core.queues.OutgoingItem` (protocol,
    destination, payload, attempts) and runs outside any transaction.  It
    raises ``TransientError`` (retried with backoff) or ``PermanentError``
    (parked at once); returning means sent.
    """

    name: str

    def send(self, runtime: Any, item: Any) -> None: ...
