"""What the client needs of a delivery service, whichever carries it.

The calls are the requests of ``tessera serve`` (docs/server-protocol.md),
made synchronously: the tick's jobs call them between transactions, never
inside one.  A network failure raises
:class:`~protocols.xmtp.errors.ServiceUnavailable` (transient, retried); a
refusal :class:`~protocols.xmtp.errors.ServiceRefused` with the server's code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

# The message types of the wire (records.py keeps them), re-exported for the client's modules.
from protocols.libraries.delivery.records import APPLICATION as APPLICATION
from protocols.libraries.delivery.records import COMMIT as COMMIT
from protocols.libraries.delivery.records import PROPOSAL as PROPOSAL
from protocols.libraries.delivery.records import WELCOME as WELCOME


@attrs.frozen
class ServerMessage:
    """One stored message as the service hands it out (history, welcomes, pushes).

    Attributes:
        id: the service's id; id order is server order.
        group_id: the MLS group it was stored under.
        sender: the sending installation (64 hex).
        server_timestamp_us: when the service stored it.
        payload: the MLSMessage bytes.
        message_type: APPLICATION, COMMIT, WELCOME or PROPOSAL.
        epoch: the epoch its header names (0 for a welcome).
        superseded: a commit that lost its epoch to an earlier one.
        sequence: its number in its group's history (1, 2, 3... none skipped), so a message left out of a
            page shows; None when the service gives none.
    """

    id: str
    group_id: bytes
    sender: str
    server_timestamp_us: int
    payload: bytes = attrs.field(repr=False)
    message_type: int
    epoch: int
    superseded: bool
    sequence: int | None = attrs.field(default=None, kw_only=True)

    @property
    def cursor(self) -> str:
        """The position just after this message, as the service reads cursors."""
        return f"{self.server_timestamp_us}.{self.id}"


@attrs.frozen
class Receipt:
    """The service's answer to a send."""

    message_id: str
    server_timestamp_us: int
    superseded: bool
    duplicate: bool


@attrs.frozen
class Page:
    """Messages strictly after a cursor, oldest first; ``has_more`` says another page follows."""

    messages: tuple[ServerMessage, ...]
    has_more: bool


@attrs.frozen
class Binding:
    """An installation an address claims, as the service stores it (unverified: check it)."""

    installation: str
    binding: bytes = attrs.field(repr=False)


class DeliveryService(Protocol):
    """A connection to the delivery service, acting as one installation."""

    @property
    def installation(self) -> str: ...

    def send(self, group_id: bytes, payload: bytes, *, recipient: str | None = None) -> Receipt: ...

    def history_after(self, group_id: bytes, cursor: str | None, limit: int) -> Page: ...

    def welcomes_after(self, cursor: str | None, limit: int) -> Page: ...

    def join(self, group_id: bytes) -> None: ...

    def leave(self, group_id: bytes) -> None: ...

    def publish_key_packages(self, key_packages: Sequence[bytes]) -> int: ...

    def fetch_key_package(self, installation: str) -> bytes: ...

    def publish_identity(self, address: str, binding: bytes) -> None: ...

    def fetch_identity(self, address: str) -> tuple[Binding, ...]: ...

    def acknowledge(self, message_ids: Sequence[str]) -> None:
        """Our deliveries of ``message_ids`` are processed: the service may stop holding them for us."""
        ...

    def close(self) -> None: ...
