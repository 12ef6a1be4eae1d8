"""What a plugin registers: its protocol, commands, jobs and transports, and the
types of the callables it hands the core.

Read with :mod:`core.hookspecs`: the hooks return these records, and the
aliases below say what each callable receives, returns and may raise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, runtime_checkable
from typing import Protocol as TypingProtocol

import attrs

from core.errors import InvalidInput

if TYPE_CHECKING:
    from core import contract
    from core.leases import Lease
    from core.pipeline import Outcome
    from core.queues import OutgoingItem, WorkItem
    from core.records import Blocked, Envelope, OutcomeKind, Result, StoredEvent
    from core.runtime import Context, Runtime

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")

#: Bind values of a parameterised SQL statement: a sequence for ``?``, a mapping for ``:name``.
Bindings = Sequence[Any] | Mapping[str, Any] | None
#: A JSON-compatible event payload (what ``StoredEvent.data`` holds).
EventData = dict[str, Any]

#: ``decode(blob) -> Envelope``. Raise :class:`core.errors.DecodeError` (or
#: ``MalformedInput``) for input that can never decode: the item is parked at once.
Decoder = Callable[[bytes], "Envelope"]
#: ``handler(ctx, envelope) -> Result | Blocked``. Pure: read through ``ctx``, never
#: write. Raise ``PermanentError`` to park, ``TransientError`` to retry with backoff.
Handler = Callable[["Context", "Envelope"], "Result | Blocked"]
#: ``command(ctx, params) -> Result`` (any value when ``manages_transactions``).
CommandFn = Callable[["Context", dict[str, Any]], Any]
#: ``upcast(data) -> data``: one payload version to the next.
Upcaster = Callable[[EventData], EventData]
#: ``prepare(runtime, items) -> results``: one result per item, in order (None: nothing prepared for it).
Preparer = Callable[["contract.Runtime", Sequence["WorkItem"]], Sequence[Any]]
#: ``decode(blob, prepared) -> Envelope``: the decoder, given what the prepare stage made of ``blob``.
PreparedDecoder = Callable[[bytes, Any], "Envelope"]


class Rows(TypingProtocol):
    """What a statement returns: iterate it, fetch all rows, or close it early."""

    def __iter__(self) -> Iterator[Any]: ...

    def fetchall(self) -> list[Any]: ...

    def close(self) -> None:
        """Finish the statement early (a walk that stopped before its last row)."""


class ProjectionConnection(TypingProtocol):
    """The SQL a projector may run: statements on its own tables, inside a
    transaction someone else owns (the item's, or a rebuild's). It never begins,
    commits or rolls back. At run time this is an ``apsw.Connection``."""

    def execute(self, statement: str, bindings: Bindings = None, /) -> Rows: ...

    def executemany(self, statement: str, sequenceofbindings: Any, /) -> Rows: ...


#: ``apply(conn, event)`` for one event type of a projector.
ProjectorFn = Callable[[ProjectionConnection, "StoredEvent"], None]


def _protocol_name(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidInput(
            f"protocol name {value!r} must be 1-32 lowercase letters, digits or _ (starting with a letter)"
        )


@runtime_checkable
class ProjectorLike(TypingProtocol):
    """What the core needs of a projector (the full contract is ``projectors.Projector``)."""

    # Read-only properties, so a frozen attrs class (``projectors.Projector``) satisfies them.
    @property
    def name(self) -> str: ...

    @property
    def protocol(self) -> str: ...

    @property
    def event_types(self) -> frozenset[str]: ...

    @property
    def tables(self) -> tuple[str, ...]: ...

    @property
    def rebuild_key(self) -> str | None: ...

    @property
    def isolate_failures(self) -> bool: ...

    def apply(self, conn: ProjectionConnection, event: StoredEvent) -> None: ...


@attrs.frozen
class Command:
    """A named command run by ``run_command``.

    Attributes:
        fn: ``fn(ctx, params) -> Result``; pure unless ``manages_transactions``.
        manages_transactions: the command opens its own (per-item) transactions;
            the runner then opens none and applies nothing for it.
        description: one line for ``tessera plugins``.
    """

    fn: CommandFn
    manages_transactions: bool = False
    description: str = ""


@attrs.frozen
class PrepareStage:
    """A protocol's prepare stage: work on a batch of items that needs no transaction (signature checks,
    opening envelopes, decrypting ahead), done before the items are handled, possibly in worker processes.

    Its results travel with the items (``WorkItem.prepared``) to the decoder and the handler
    (``ctx.prepared``); the pure step stays pure.  A prepared result is a hint, never a verdict: whoever
    takes it checks it against what it holds (the blob, the state at that point) and does the work itself
    when it does not fit, so a wrong, stale or missing result changes the time an item takes, never its
    outcome.  The tick runs the stage on each micro-batch of incoming items; the door
    (:class:`core.door.Door`) on the items a plugin brings it.

    Attributes:
        batch: ``batch(runtime, items) -> results``, one per item in order; runs outside any transaction
            (it may read in its own), and may return None for any item (nothing prepared).
        decode: ``decode(blob, prepared) -> Envelope``: the protocol's decoder given an item's prepared
            result (a signature checked ahead, say); None: items are decoded as usual.
        least: the fewest items worth preparing (starting workers costs more than a few items save): a
            smaller batch is not prepared, and the tick does not read its incoming rows ahead for
            micro-batches (``batch_items``) smaller than this.
    """

    batch: Preparer
    decode: PreparedDecoder | None = None
    least: int = attrs.field(default=1, validator=attrs.validators.ge(1))


def _projectors(projectors: Iterable[ProjectorLike]) -> tuple[ProjectorLike, ...]:
    return tuple(projectors)


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
        arrival_order: ``fn(blob) -> sort key``: the order in which blobs delivered together (one
            ``tessera ingest`` batch, one relay answer) are queued, e.g. their authors' time; it must
            accept any bytes (a blob it cannot read sorts anywhere, the decoder refuses it later).
            None keeps the order they came in.
        prepare: the protocol's prepare stage (:class:`PrepareStage`), or None when it has none.
        describe: ``fn(blob) -> dict | None``: a view of a queued or parked blob for people
            (``tessera parked list --show``): its readable, public fields, never key material; None
            for a blob it cannot read (then the blob is shown in hex).  None: always hex.
    """

    name: str = attrs.field(validator=_protocol_name)
    package: str
    decode: Decoder
    handlers: Mapping[str, Handler] = attrs.field(factory=dict)
    commands: Mapping[str, Command] = attrs.field(factory=dict)
    projectors: Sequence[ProjectorLike] = attrs.field(factory=tuple, converter=_projectors)
    upcasters: Mapping[tuple[str, int], Upcaster] = attrs.field(factory=dict)
    description: str = ""
    arrival_order: Callable[[bytes], Any] | None = None
    prepare: PrepareStage | None = None
    describe: Callable[[bytes], dict[str, Any] | None] | None = None


@attrs.define
class TickContext:
    """What a job gets from the tick: the runtime, the lease, a work budget.

    Attributes:
        runtime: the :class:`core.runtime.Runtime`.
        lease: the tick lease when held (pass it to fenced operations), else None.
        budget: units of work left in this pass (None = unbounded).
        outcomes: item outcomes counted by kind.
    """

    runtime: Runtime
    lease: Lease | None = None
    budget: int | None = None
    outcomes: dict[OutcomeKind, int] = attrs.field(factory=dict)

    def has_budget(self) -> bool:
        """Work may go on in this pass."""
        return self.budget is None or self.budget > 0

    def spend(self, units: int = 1) -> None:
        """Count ``units`` of work against the budget."""
        if self.budget is not None:
            self.budget -= units

    def record(self, outcome: Outcome) -> None:
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
    run: Callable[[TickContext], int]
    needs_lease: bool = True
    next_due_ms: Callable[[Runtime], int | None] | None = None


class Transport(TypingProtocol):
    """Publishes outgoing wire messages.

    ``send(runtime, item)`` gets a :class:`core.queues.OutgoingItem` (protocol,
    destination, payload, attempts) and runs outside any transaction.  It
    raises ``TransientError`` (retried with backoff) or ``PermanentError``
    (parked at once); returning means sent.
    """

    name: str

    def send(self, runtime: Runtime, item: OutgoingItem) -> None: ...


@attrs.frozen
class LazyCommand:
    """A top-level command of the ``tessera`` command line, imported only when it is run or its help is shown.

    Returned by ``register_cli_commands``, so ``tessera --help`` and the core's
    own commands never import a plugin's command line (nor the engine behind it).

    Attributes:
        name: the command's name (``tessera <name> ...``); a protocol's group is named after the protocol.
        target: where the ``click.Command`` lives, ``"package.module:attribute"``.
        help: its first line of help, as ``tessera --help`` lists it (the command's own docstring's first line;
            the test kit checks they agree).
    """

    name: str
    target: str = attrs.field(validator=attrs.validators.matches_re(r"^[\w.]+:\w+$"))
    help: str
