"""Fixtures for the sovereign store: a real SQLite file with the plugin, and groups of real MLS members."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from protocols.sovereign.config import Limits
from protocols.sovereign.service import Store
from tests.sovereign.mls_group import Group


@pytest.fixture
def sovereign_app(make_app):
    from protocols import sovereign

    return make_app([sovereign], ["sovereign"])


@pytest.fixture
def make_store(make_app, clock) -> Callable[..., Store]:
    """``make_store(limits=None, app_settings=None)``: a Store on a fresh database file, its clock at the wall
    clock's time (KeyPackages made now must be within their lifetime)."""
    from protocols import sovereign

    clock.now = int(time.time() * 1000)
    return lambda limits=None, app_settings=None: Store(
        make_app([sovereign], ["sovereign"], app_settings=app_settings), limits
    )


@pytest.fixture
def store(make_store) -> Store:
    return make_store()


def seat(store: Store, group: Group) -> None:
    """Every member of ``group`` joins the store's group: the creator first, the others through its welcomes
    (which they acknowledge, as a client does once it has joined)."""
    store.join(group.creator.installation, group.gid)
    for member in group.members[1:]:
        welcome = group.welcomes[member.installation]
        stored = store.send(group.creator.installation, group.gid, welcome, recipient=member.installation)
        store.join(member.installation, group.gid)
        store.ack(member.installation, [stored.message.id])


__all__ = ["Limits", "seat"]
