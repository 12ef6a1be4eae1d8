"""The docs stay true: every setting and status key is documented."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from core.settings import SETTINGS
from core.status import STATUS_KEYS
from jobs.cli import cli
from tests.conftest import ROOT

OPERATIONS = (ROOT / "docs" / "operations.md").read_text()


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_every_setting_is_documented_with_its_default(setting):
    row = re.search(rf"^\| `{setting.name}` \| `?([^|`]*)`? \|", OPERATIONS, re.MULTILINE)
    assert row, f"docs/operations.md lacks a settings row for {setting.name}"
    assert row.group(1).strip() == str(setting.default), f"{setting.name}: documented default is stale"


@pytest.mark.parametrize("key", STATUS_KEYS)
def test_every_status_key_is_documented(key):
    assert re.search(rf"^\| `{key}` \|", OPERATIONS, re.MULTILINE), f"status key {key} is not documented"


def test_readme_starts_with_the_two_commands():
    lines = [line for line in (ROOT / "README.md").read_text().splitlines() if line.strip()]
    assert lines[0] == "# Tessera"
    commands = [line for line in lines[1:8] if line.startswith("python3 -m venv")]
    assert len(commands) == 2 and commands[0].endswith("tessera demo") and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == commands[1], ".ci/run must run the README's test command"
    assert "export TESSERA_REQUIRE_PEERS=1" in ci, "in CI a missing live peer is a failure, not a skip"


# --- every `tessera ...` in the docs names real commands and flags ------------------------------------------------

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
# Inline code may wrap onto the next line of a paragraph.
_INLINE = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")
# Where a shell command starts: a line's start, after a pipe, &&, ;, $( or ExecStart=; the program may have a path.
_IN_SHELL = re.compile(r"(?:^|[|;(=]|&&)\s*(?:[\w./-]*/)?tessera(?=\s|$)(?P<rest>.*)$")
_END_OF_COMMAND = {"|", "||", "&&", ";", ">", ">>", "<", "2>&1", "&", "...", "…", "--"}


def invocations(path: Path) -> list[tuple[int, str]]:
    """(line, what follows `tessera`) for each invocation in code blocks and inline code."""
    text = path.read_text()
    found = []
    prose = text
    for block in _FENCED.finditer(text):
        line_number = text.count("\n", 0, block.start(1)) + 1
        pending = ""
        for offset, line in enumerate(block.group(1).split("\n")):
            if line.endswith("\\"):  # continued on the next line: one command
                pending += line[:-1] + " "
                continue
            for match in _IN_SHELL.finditer(pending + line):
                found.append((line_number + offset, match["rest"]))
            pending = ""
        blank = "".join(c if c == "\n" else " " for c in block.group(0))
        prose = prose[: block.start()] + blank + prose[block.end() :]
    for span in _INLINE.finditer(prose):
        command = re.match(r"\s*(?:[\w./-]*/)?tessera(?=\s|$)(?P<rest>.*)$", span.group(1), re.DOTALL)
        if command:
            found.append((prose.count("\n", 0, span.start()) + 1, command["rest"]))
    return found


def _words(rest: str) -> list[str]:
    try:
        return shlex.split(rest, comments=True)
    except ValueError:  # an unbalanced quote in prose: plain words are enough to find commands and flags
        return rest.split()


def unknown_parts(rest: str) -> list[str]:
    """Subcommands and --flags of ``tessera <rest>`` that the click tree does not have."""
    command: click.Command = cli
    path = ["tessera"]
    problems = []
    words = _words(rest)
    i = 0
    while i < len(words):
        word = words[i].strip("[]")
        if words[i] in _END_OF_COMMAND or word in _END_OF_COMMAND:
            break
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            option = next((p for p in command.params if isinstance(p, click.Option) and name in p.opts), None)
            if option is None and name != "--help":
                problems.append(f"`{' '.join(path)}` has no option {name}")
            elif option is not None and not (option.is_flag or option.count) and "=" not in word:
                i += 1  # its value
        elif isinstance(command, click.Group) and word and not word.startswith("-"):
            if word not in command.commands:
                problems.append(f"`{' '.join(path)}` has no subcommand {word!r}")
                break
            command = command.commands[word]
            path.append(word)
        i += 1
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_documented_command_and_flag_exists(doc):
    problems = [
        f"{doc.name}:{line}: {problem} (in `tessera {rest.strip()}`)"
        for line, rest in invocations(doc)
        for problem in unknown_parts(rest)
    ]
    assert not problems, "\n".join(problems)


def test_the_docs_check_finds_invocations_everywhere():
    found = {doc.name: invocations(doc) for doc in DOCS}
    assert all(found[name] for name in ("README.md", "operations.md", "marmot.md", "plugin-guide.md")), found
    assert unknown_parts("--db x.db rebuild --bucket-events 5") == ["`tessera rebuild` has no option --bucket-events"]
    assert unknown_parts("marmot histroy --group G") == ["`tessera marmot` has no subcommand 'histroy'"]
    assert unknown_parts("--db chat.db marmot history --group G [--until C:ID] [--json] | jq .") == []


@pytest.mark.parametrize(
    ("section", "doc", "row"),
    [
        ("xmtp", "xmtp.md", "| `{name}` | `{env}` |"),
        ("sovereign", "sovereign.md", "\n{leaf} = "),
        ("sovereign", "server-protocol.md", "\n{leaf} = "),
    ],
)
def test_every_plugin_setting_is_documented(section: str, doc: str, row: str) -> None:
    """marmot.md's table has its own test (tests/marmot/test_settings_documented.py); the core's is operations.md's."""
    from core.plugins import declared_settings, make_plugin_manager

    text = (ROOT / "docs" / doc).read_text()
    declared = [s for s in declared_settings(make_plugin_manager()) if s.section == section]
    assert declared
    if doc == "server-protocol.md":  # its example shows the server's keys only
        declared = [s for s in declared if s.name.startswith("server.")]
    missing = [
        s.key for s in declared if row.format(name=s.name, env=s.env_key, leaf=s.name.rpartition(".")[2]) not in text
    ]
    assert missing == []


# --- every benchmark command in the docs names a real benchmark, script and flag ----------------------------------

_BENCH = re.compile(r"python (?:-m bench(?=[\s`]|$)|(?P<script>bench/\w+\.py))(?P<rest>[^`|#)\n]*)")


def benchmark_invocations(path: Path) -> list[tuple[int, str | None, list[str]]]:
    """(line, script or None for ``python -m bench``, its words) for each benchmark command in ``path``."""
    text = path.read_text()
    return [
        (text.count("\n", 0, found.start()) + 1, found["script"], _words(found["rest"]))
        for found in _BENCH.finditer(text)
    ]


def benchmark_problems(script: str | None, words: list[str]) -> list[str]:
    """What ``python -m bench <words>`` or ``python <script> <words>`` names that the benchmarks do not have."""
    source_path = ROOT / (script or "bench/__main__.py")
    if not source_path.exists():
        return [f"there is no {script}"]
    source = source_path.read_text() + (ROOT / "bench" / "common.py").read_text()  # options the scripts share
    problems = [f"{source_path.name} has no option {word}" for word in words if word.startswith("--")
                and f'"{word.split("=", 1)[0]}"' not in source]  # fmt: skip
    if script is None:
        names = set(re.findall(r'^    "([\w-]+)": \(', source, re.MULTILINE))
        for word in words:
            if word.startswith("-"):
                break  # the benchmarks' names come first
            if word not in names:
                problems.append(f"python -m bench has no benchmark {word!r}")
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_documented_benchmark_command_exists(doc):
    problems = [
        f"{doc.name}:{line}: {problem}"
        for line, script, words in benchmark_invocations(doc)
        for problem in benchmark_problems(script, words)
    ]
    assert not problems, "\n".join(problems)


def test_the_benchmark_check_finds_what_is_not_there():
    assert benchmark_invocations(ROOT / "docs" / "benchmarks.md")
    assert benchmark_problems(None, ["tick", "fill", "--events", "1000000"]) == []
    assert benchmark_problems(None, ["tikc", "--evnts", "5"]) == [
        "__main__.py has no option --evnts",
        "python -m bench has no benchmark 'tikc'",
    ]
    assert benchmark_problems("bench/fill.py", ["--events", "N"]) == []
    assert benchmark_problems("bench/nosuch.py", []) == ["there is no bench/nosuch.py"]
