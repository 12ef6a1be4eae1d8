"""The keys of the processing records (:mod:`.seen`), in one place: :mod:`.store` prunes the epoch index by them.

``<no>`` is the group's number (:mod:`.numbers`), ``<created_at>`` the outer event's (10 digits, so a group's
keys run in time order), ``<outer>`` and ``<rumor>`` ids in their short form (:mod:`.short_ids`)::

    s/<no>/<created_at>/<outer>                   the record of an outer event
    c/<no>/<rumor>/<created_at>/<outer>           an outer event that carries the rumor
    e/<no>/<epoch>/<created_at>/<outer>           an event decided at an epoch of the rollback window
    k/<no>/<epoch>/<outer>                        the raw event decided there, kept for a rollback to decide again
"""

from __future__ import annotations

from protocols.marmot.state.short_ids import full, short

SEEN = "s/"
CARRIED = "c/"
EPOCHS = "e/"
KEPT = "k/"


def when(created_at: int, outer_id: str) -> str:
    """The end of every key of the outer event ``outer_id`` made at ``created_at``."""
    return f"{created_at:010d}/{short(outer_id)}"


def seen_prefix(number: int) -> str:
    return f"{SEEN}{number}/"


def seen_name(number: int, outer: str) -> str:
    """The record's key; ``outer`` is the event's :func:`when`."""
    return f"{SEEN}{number}/{outer}"


def carried_prefix(number: int, rumor_id: str | None = None) -> str:
    return f"{CARRIED}{number}/" if rumor_id is None else f"{CARRIED}{number}/{short(rumor_id)}/"


def carried_name(number: int, rumor_id: str, outer: str) -> str:
    return carried_prefix(number, rumor_id) + outer


def epochs_prefix(number: int, epoch: int | None = None) -> str:
    return f"{EPOCHS}{number}/" if epoch is None else f"{EPOCHS}{number}/{epoch}/"


def epoch_name(number: int, epoch: int, outer: str) -> str:
    return epochs_prefix(number, epoch) + outer


def kept_prefix(number: int, epoch: int | None = None) -> str:
    return f"{KEPT}{number}/" if epoch is None else f"{KEPT}{number}/{epoch}/"


def kept_name(number: int, epoch: int, outer_id: str) -> str:
    return kept_prefix(number, epoch) + short(outer_id)


def epoch_of(name: str) -> int:
    """The epoch an ``e/`` or ``k/`` key names."""
    return int(name.split("/", 3)[2])


def outer_of(name: str) -> tuple[int, str]:
    """``(created_at, outer id as hex)`` of a key that ends with them."""
    created_at, outer_id = name.rsplit("/", 2)[1:]
    return int(created_at), full(outer_id)


def rumor_of(name: str) -> str:
    """The rumor id (hex) a ``c/`` key names."""
    return full(name.split("/", 3)[2])
