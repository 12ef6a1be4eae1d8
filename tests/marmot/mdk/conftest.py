"""Fixtures for interop with MDK 0.8.0: the loaded module, and a factory of MDK members."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

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
