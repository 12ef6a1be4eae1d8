"""The plugin contract: every hook documented and tested, loading, validation."""

from __future__ import annotations

import importlib
import inspect
import re

import click
import pluggy
import pytest

from core import drain, hookimpl, hookspecs, queues
from core.errors import PluginError, ServiceNotOpen, TransientError
from core.plugins import make_plugin_manager
from core.protocol import Job, Protocol, TickContext
from core.registry import Registry
from projectors import Projector
from tests.conftest import ROOT
from tests.fixtures import ledger
from tests.helpers import open_test_app

HOOKS = sorted(name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(fn, "tessera_spec"))


def test_hookspecs_are_found():
    assert "register_protocol" in HOOKS and len(HOOKS) >= 8


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_docstring(hook):
    doc = getattr(hookspecs, hook).__doc__ or ""
    assert len(doc.strip()) > 40, f"{hook} needs a docstring saying when it is called and what it returns"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented_in_the_plugin_guide(hook):
    guide = (ROOT / "docs" / "plugin-guide.md").read_text()
    assert re.search(rf"^### {hook}\(", guide, re.MULTILINE), f"docs/plugin-guide.md lacks a '### {hook}(' section"


def _hook_implementations(hook: str) -> list[str]:
    """Files of shipped plugins (core's own, protocols/) and of tests that implement ``hook``."""
    pattern = re.compile(rf"@hookimpl\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*def {hook}\(")
    files = [ROOT / "core" / "builtin.py", *(ROOT / "protocols").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    return [str(path.relative_to(ROOT)) for path in files if pattern.search(path.read_text())]


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_implemented_by_a_shipped_or_test_plugin(hook):
    """A hook nobody implements is a hook nobody has tried: each has a working example."""
    assert _hook_implementations(hook), f"no shipped or test plugin implements {hook}"


def test_the_implementation_scan_finds_decorated_hooks_only():
    assert "protocols/marmot/__init__.py" in _hook_implementations("register_protocol")
    assert _hook_implementations("no_such_hook") == []


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test(hook):
    source = (ROOT / "tests" / "test_plugins.py").read_text()
    assert f"def test_hook_{hook}(" in source


def test_entry_points_find_the_builtin_protocols():
    registry = Registry(make_plugin_manager())
    assert {"example", "marmot"} <= set(registry.protocols)
    assert "process_incoming" in registry.jobs and "loopback" in registry.transports


def test_a_misspelled_hook_fails_at_load():
    class Typo:
        @hookimpl
        def register_protocl(self):
            return None

    with pytest.raises(pluggy.PluginValidationError, match="register_protocl"):
        make_plugin_manager([Typo()], entry_points=False)


def test_two_plugins_with_one_protocol_name_are_refused():
    class Twin:
        @hookimpl
        def register_protocol(self):
            return Protocol("ledger", "tests.fixtures.ledger", ledger.decode)

    with pytest.raises(PluginError, match="two plugins register a protocol named 'ledger'"):
        Registry(make_plugin_manager([ledger, Twin()], entry_points=False))


def test_a_projector_must_belong_to_its_protocol():
    class Stray:
        @hookimpl
        def register_protocol(self):
            return Protocol(
                "stray", "tests.fixtures.ledger", ledger.decode, projectors=(Projector("x", "other", ("t",)),)
            )

    with pytest.raises(PluginError, match="says protocol 'other'"):
        Registry(make_plugin_manager([Stray()], entry_points=False))


def test_register_protocol_must_return_a_protocol():
    class Wrong:
        @hookimpl
        def register_protocol(self):
            return {"name": "wrong"}

    with pytest.raises(PluginError, match="must return core.protocol.Protocol"):
        Registry(make_plugin_manager([Wrong()], entry_points=False))


# --- one test per hook ---------------------------------------------------------


def test_hook_register_protocol(make_app):
    app = make_app([ledger], ["ledger"])
    assert app.registry.protocol("ledger").description == "test-only ledger"
    assert app.registry.projector("ledger.balances").tables == ("ledger_accounts", "ledger_entries")


def test_hook_register_jobs(make_app):
    from jobs.tick import TickDaemon

    ran: list[int] = []

    def count_pass(tick: TickContext) -> int:
        assert tick.lease is not None
        ran.append(tick.lease.token)
        return 0

    class Jobs:
        @hookimpl
        def register_jobs(self):
            return [Job("count_passes", order=5, run=count_pass)]

    app = make_app([ledger, Jobs()], ["ledger"])
    report = TickDaemon(app, mode="once").run()
    assert ran == [1] and report.passes == 1
    assert [j.name for j in TickDaemon(app).jobs][:4] == [
        "count_passes",
        "drain_recheck",
        "drain_deferred",
        "process_incoming",
    ]


def test_hook_register_transports(make_app):
    sent: list[str | bytes] = []

    class Flaky:
        name = "flaky"

        def send(self, runtime, item):
            if not sent:
                sent.append("failed once")
                raise TransientError("relay unreachable")
            sent.append(item.payload)

    class Transports:
        @hookimpl
        def register_transports(self):
            return [Flaky()]

    from core import publish
    from core.intents import EnqueueOutgoing
    from core.records import Result

    app = make_app([ledger, Transports()], ["ledger"])
    with app.db.write():
        app.runtime.apply("ledger", Result(intents=[EnqueueOutgoing(b"hello", transport="flaky")]), app.clock.now_ms())
    publish.publish_due(app.runtime)
    assert app.db.one("SELECT status, attempts FROM outgoing") == ("pending", 1)
    app.clock.advance(60_000)
    publish.publish_due(app.runtime)
    assert sent == ["failed once", b"hello"]
    assert app.db.value("SELECT status FROM outgoing") == "sent"


def test_hook_register_cli_commands():
    group = click.Group("t")
    pm = make_plugin_manager(entry_points=True)
    declared = {entry.name: entry for found in pm.hook.register_cli_commands(cli=group) for entry in found or ()}
    assert {"example", "marmot", "serve", "xmtp"} <= set(declared)
    for entry in declared.values():  # each names a real command, and --help lists it with that command's own help
        module, _, attribute = entry.target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command) and entry.help == (command.help or "").split("\n")[0].strip(), entry


def test_hook_register_settings():
    from core.plugins import declared_settings

    pm = make_plugin_manager(entry_points=True)
    keys = [setting.key for setting in declared_settings(pm)]
    assert keys[0].startswith("core.") and len(keys) == len(set(keys))
    assert {"core.batch_ms", "marmot.snapshots", "xmtp.decrypt_ahead", "sovereign.server.port"} <= set(keys)


def test_a_plugin_that_is_no_protocol_declares_settings_and_reads_them_as_the_core_does():
    from core.plugins import declared_settings
    from core.setting import Setting
    from core.settings import Settings

    timeout = Setting("timeout_s", 5, "How long the exporter waits.", 1, 60, section="exporter")

    class Exporter:
        @hookimpl
        def register_settings(self):
            return [timeout]

    pm = make_plugin_manager([Exporter()], entry_points=False)
    assert timeout in declared_settings(pm)
    settings = Settings.load(env={"TESSERA_EXPORTER_TIMEOUT_S": "9"})
    assert settings.sources.values([timeout]) == {"timeout_s": 9}
    twice = make_plugin_manager([Exporter(), Exporter()], entry_points=False)
    with pytest.raises(PluginError, match="setting exporter.timeout_s is declared twice"):
        declared_settings(twice)


def test_hook_prepare_connection(make_app):
    class Functions:
        @hookimpl
        def prepare_connection(self, conn):
            conn.create_scalar_function("shout", lambda s: s.upper() + "!", 1, deterministic=True)

    app = make_app([ledger, Functions()], ["ledger"])
    assert app.db.value("SELECT shout('hi')") == "HI!"


class _Journal:
    """A service object that notes its opening and closing (in a list the test owns)."""

    def __init__(self, app, journal: list[str], name: str, fail_close: bool = False):
        self.path, self.journal, self.name, self.fail_close = app.db.path, journal, name, fail_close
        journal.append(f"open {name}")

    def close(self) -> None:
        self.journal.append(f"close {self.name}")
        if self.fail_close:
            raise OSError(f"{self.name} cannot close")


class _Other(_Journal):
    pass


def _journal_plugin(journal: list[str], kind: type[_Journal] = _Journal, **options):
    class Plugin:
        @hookimpl
        def open_service(self, app):
            return kind(app, journal, kind.__name__, **options)

    return Plugin()


def test_hook_open_service(make_app, tmp_path):
    journal: list[str] = []
    plugin = _journal_plugin(journal)
    first = make_app([ledger, plugin], ["ledger"], path=str(tmp_path / "first.db"))
    second = make_app([ledger, plugin], ["ledger"], path=str(tmp_path / "second.db"))
    # One object per app, found by its class from the app and from its runtime alike.
    assert first.service(_Journal) is first.runtime.service(_Journal)
    assert first.service(_Journal) is not second.service(_Journal)
    assert (first.service(_Journal).path, second.service(_Journal).path) == (first.db.path, second.db.path)
    first.close()
    assert journal == ["open _Journal", "open _Journal", "close _Journal"]


def test_services_close_in_reverse_order_and_a_failing_close_does_not_stop_the_others(make_app, caplog):
    journal: list[str] = []
    app = make_app(
        [ledger, _journal_plugin(journal, _Journal, fail_close=True), _journal_plugin(journal, _Other)], ["ledger"]
    )
    app.close()
    opened = [entry.split()[1] for entry in journal[:2]]
    assert sorted(opened) == ["_Journal", "_Other"]
    assert journal[2:] == [f"close {name}" for name in reversed(opened)]
    assert "closing its _Journal failed" in caplog.text
    with pytest.raises(ServiceNotOpen, match="no plugin opened a _Journal service"):
        app.service(_Journal)


def test_a_failing_open_closes_the_services_already_open(tmp_path, settings):
    journal: list[str] = []

    class Broken:  # registered first, so opened last (pluggy calls the latest registered first)
        @hookimpl
        def open_service(self, app):
            raise OSError("no relay configured")

    with pytest.raises(OSError, match="no relay configured"):
        open_test_app(str(tmp_path / "a.db"), settings, [ledger, Broken(), _journal_plugin(journal)], ["ledger"])
    assert journal == ["open _Journal", "close _Journal"]


def test_open_service_must_return_something_closable(tmp_path, settings):
    class Wrong:
        @hookimpl
        def open_service(self, app):
            return {"relays": []}

    with pytest.raises(PluginError, match="open_service returned a dict, which has no close"):
        open_test_app(str(tmp_path / "a.db"), settings, [ledger, Wrong()], ["ledger"])


def test_hook_on_item_processed(make_app):
    seen = []

    class Observer:
        @hookimpl
        def on_item_processed(self, protocol, source, item_id, outcome, reason):
            seen.append((protocol, source, outcome, reason))

    app = make_app([ledger, Observer()], ["ledger"])
    with app.db.write():
        queues.push_incoming(
            app.db, "ledger", [ledger.wire("deposit", "a"), ledger.wire("permanent", "b"), b"garbage"], 0
        )
    drain.run_until_idle(app.runtime)
    assert [s[2] for s in seen] == ["handled", "parked", "parked"]
    assert "can never work" in seen[1][3] and "not a ledger item" in seen[2][3]


def test_hook_on_events_committed(make_app):
    batches = []

    class Observer:
        @hookimpl
        def on_events_committed(self, events):
            batches.append([e.type for e in events])

    app = make_app([ledger, Observer()], ["ledger"])
    app.runtime.run_command("ledger.deposit", {"id": "1", "account": "a", "amount": 5})
    app.runtime.run_command("ledger.transfer", {"id": "2", "from": "a", "to": "b", "amount": 1})
    app.runtime.run_command("ledger.deposit", {"id": "1", "account": "a", "amount": 5})  # duplicate: silent
    assert batches == [["deposited"], ["deposited", "deposited"]]


def test_hook_on_projection_failed(make_app):
    failures = []

    def broken(conn, event):
        raise ValueError("disk full")

    class Plugin:
        @hookimpl
        def register_protocol(self):
            base = ledger.register_protocol()
            return Protocol(
                "ledger",
                base.package,
                base.decode,
                commands=base.commands,
                projectors=(
                    Projector(
                        "ledger.broken", "ledger", ("ledger_entries",), {"deposited": broken}, isolate_failures=True
                    ),
                ),
            )

        @hookimpl
        def on_projection_failed(self, projection, seq, error):
            failures.append((projection, seq, error))

    app = make_app([Plugin()], ["ledger"])
    app.runtime.run_command("ledger.deposit", {"id": "1", "account": "a", "amount": 5})
    assert failures == [("ledger.broken", 1, "ValueError: disk full")]
