"""Fixtures for the Marmot plugin tests: group state sealed under the database's key, apps, delivery helpers."""

from __future__ import annotations

import pytest

from core import drain
from core.app import App
from protocols import marmot
from tests.helpers import open_new_test_app, push
from tests.marmot._orders import WIDE_WINDOWS

#: A key for the tests of the deprecated TESSERA_MARMOT_STATE_KEY.
KEY_HEX = "5a" * 32


@pytest.fixture(autouse=True)
def state_key(monkeypatch):
    """Every test seals group state under the key derived from its database's key file (none of the deprecated
    variables) and runs with the plugin's defaults (unless it changes them)."""
    for name in (
        "TESSERA_MARMOT_STATE_KEY",
        "TESSERA_MARMOT_STATE_KEY_FILE",
        "TESSERA_MARMOT_MAX_RETRIES",
        "TESSERA_MARMOT_RETRY_MS",
        "TESSERA_MARMOT_SNAPSHOTS",
    ):
        monkeypatch.delenv(name, raising=False)
    return KEY_HEX


@pytest.fixture
def marmot_app(make_app, tmp_path, settings, clock):
    """``marmot_app()``: a fresh app with only the marmot protocol, on a new real file (a copy of an empty one:
    see :func:`~tests.helpers.open_new_test_app`); ``path=`` or ``app_settings=`` go to ``make_app``."""
    opened: list[App] = []

    def make(**kwargs) -> App:
        if kwargs:
            return make_app([marmot], ["marmot"], **kwargs)
        path = str(tmp_path / f"marmot{len(opened)}.db")
        opened.append(open_new_test_app(path, settings, [marmot], ["marmot"], clock=clock))
        return opened[-1]

    yield make
    for app in opened:
        app.close()


@pytest.fixture
def net():
    """A real three-member group (member 0 is the admin) that the app can join as observer."""
    from tests.marmot._net import Net

    return Net(3)


@pytest.fixture
def app(marmot_app, net):
    """A marmot app that has joined ``net``'s group."""
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    return app


@pytest.fixture
def wide_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every epoch of a simulated stream (here and in the daemons started here): then no order can lose one."""
    for name, value in WIDE_WINDOWS.items():
        monkeypatch.setenv(name, value)


def deliver(app: App, *lines: bytes) -> drain.DrainSummary:
    """Queue ``lines`` and drain (clock not advanced: only commits wake blocked events)."""
    push(app, *lines, protocol="marmot")
    return drain.run_until_idle(app.runtime)


def settle(app) -> drain.DrainSummary:
    """Drain everything, jumping the clock to scheduled rechecks (budgets run out)."""
    return drain.run_until_idle(app.runtime, advance_clock=True)
