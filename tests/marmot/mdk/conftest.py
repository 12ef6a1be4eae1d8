"""Fixtures for interop with MDK 0.8.0: the loaded module, a factory of MDK members, and a Tessera member."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from jobs.tick import TickDaemon
from tests._peers import PeerUnavailable, peer_missing
from tests.marmot.mdk.mdk_peer import MdkMember, install, load


@pytest.fixture(scope="session")
def mdk_install() -> Path:
    """The cache directory of the MDK install (``site/`` patched for this glibc, ``original/`` untouched)."""
    try:
        return install()
    except PeerUnavailable as error:
        peer_missing(str(error))


@pytest.fixture(scope="session")
def mdk(mdk_install: Path) -> ModuleType:
    """The ``mdk`` module (MDK 0.8.0's Python bindings), loaded from the peers cache."""
    try:
        return load()
    except PeerUnavailable as error:
        peer_missing(str(error))


@pytest.fixture
def mdk_member(mdk: ModuleType, tmp_path: Path) -> Callable[[str], MdkMember]:
    """``mdk_member(name)``: a new MDK client with a fresh Nostr key and its own database in ``tmp_path``."""
    return lambda name: MdkMember(mdk, name, tmp_path / f"{name}.db")


@pytest.fixture
def tessera(marmot_app, clock, relay):
    """A Tessera member on the wall clock (MDK dates its events by it) with an account and KeyPackages out on
    the module's ``relay``."""
    clock.now = int(time.time() * 1000)
    app = marmot_app()
    app.runtime.run_command("marmot.identity_new", {})
    app.runtime.run_command("marmot.key_package_publish", {"relays": [relay.url], "count": 2})
    TickDaemon(app, mode="until_idle").run()
    return app
