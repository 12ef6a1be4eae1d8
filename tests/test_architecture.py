"""The one-way imports between packages, checked on every import statement (function-level ones too).

protocols -> projectors/jobs -> core.app -> schema_loader -> core's storage modules.
See docs/architecture.md for the picture and the reasons.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PACKAGES = ("core", "schema_loader", "projectors", "jobs", "protocols")
#: The room of the libraries plugins share (never plugins themselves): protocols/libraries/.
SHARED_PROTOCOL_LIBRARIES = frozenset({"protocols.libraries"})
#: The core modules schema_loader may use: storage and errors, nothing that runs work.
CORE_STORAGE = frozenset({"core", "core.db", "core.errors", "core.sql", "core.settings"})
#: May import, per package, besides itself (a protocol: itself and the shared library).
ALLOWED = {
    "core": set(),
    "schema_loader": {"core"},
    "projectors": {"core", "schema_loader"},
    "jobs": {"core", "schema_loader", "projectors"},
    "protocols": {"core", "schema_loader", "projectors", "jobs"},
}


def _modules() -> list[tuple[str, Path]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "template" in path.parts:
                continue  # the plugin scaffold's templates are not part of the project's import graph
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found.append((name, path))
    return found


def _imports(module: str, path: Path) -> set[str]:
    """Every project module ``module`` imports (resolving relative imports)."""
    names: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if _is_module(f"{base}.{alias.name}"))
    return {name for name in names if name.split(".")[0] in PACKAGES}


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _package(module: str) -> str:
    return module.split(".")[0]


def _protocol(module: str) -> str | None:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "protocols" and len(parts) > 1 else None


MODULES = _modules()


def _violations(module: str, path: Path) -> list[str]:
    own = _package(module)
    wrong = []
    for target in sorted(_imports(module, path)):
        other = _package(target)
        if other == own:
            if own == "protocols" and _protocol(module) and _protocol(target):
                mine, theirs = _protocol(module), _protocol(target)
                if theirs != mine and theirs not in SHARED_PROTOCOL_LIBRARIES and mine not in SHARED_PROTOCOL_LIBRARIES:
                    wrong.append(f"{target} (a plugin never imports another plugin)")
                if mine in SHARED_PROTOCOL_LIBRARIES and theirs != mine:
                    wrong.append(f"{target} (a shared library imports no plugin, nor another library)")
            continue
        if module == "core.app" and target.startswith("schema_loader"):
            continue  # the composition root: opening an app loads its schemas
        if own == "schema_loader" and target in CORE_STORAGE:
            continue
        if other not in ALLOWED[own] or own == "schema_loader":
            wrong.append(target)
    return wrong


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_imports_point_one_way(module: str, path: Path):
    assert _violations(module, path) == []


def test_the_import_walk_sees_function_level_and_relative_imports(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text(
        "from . import db\ndef f():\n    import jobs.tick\n    from protocols.marmot.wire import outer, nostr\n"
    )
    expected = {
        "core",
        "core.db",
        "jobs.tick",
        "protocols.marmot.wire",
        "protocols.marmot.wire.outer",
        "protocols.marmot.wire.nostr",
    }
    assert _imports("core.mod", source) == expected
    assert "jobs.tick" in _violations("core.mod", source)


def test_every_top_level_package_says_what_lives_there_and_what_it_may_import():
    for package in PACKAGES:
        docstring = ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text())) or ""
        assert "import" in docstring, f"{package}/__init__.py needs a docstring naming what it may import"


WALK = ROOT / "docs" / "architecture.md"
WALK_STEP = re.compile(r"^\|[^|]+\| `([\w/]+\.py)` \| `([\w.]+)` \|$", re.MULTILINE)


def _defines(path: Path, dotted: str) -> bool:
    """``path`` defines ``dotted`` (a function or class, or ``Class.method``) at top level."""
    scope: list[ast.stmt] = ast.parse(path.read_text()).body
    for part in dotted.split("."):
        found = [
            node
            for node in scope
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == part
        ]
        if not found:
            return False
        scope = found[0].body if isinstance(found[0], ast.ClassDef) else []
    return True


def test_the_walk_names_only_files_and_functions_that_exist():
    text = WALK.read_text()
    steps = WALK_STEP.findall(text)
    assert len(steps) >= 30, "docs/architecture.md lost its step tables"
    missing = [
        f"{file}:{name}" for file, name in steps if not (ROOT / file).exists() or not _defines(ROOT / file, name)
    ]
    assert missing == []
    named_files = set(re.findall(r"`((?:core|schema_loader|projectors|jobs|protocols|tests)/[\w/]+\.py)`", text))
    assert [file for file in sorted(named_files) if not (ROOT / file).exists()] == []


def test_the_walk_check_notices_a_missing_function(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("class Daemon:\n    def run(self):\n        pass\n\ndef step():\n    pass\n")
    assert _defines(module, "Daemon.run") and _defines(module, "step")
    assert not _defines(module, "Daemon.stop") and not _defines(module, "run")


# --- the core's tables are the core's ---------------------------------------------------------------


def _core_tables() -> frozenset[str]:
    """Every table the core creates: core/schema.sql and each of core/migrations/*.sql."""
    sources = [ROOT / "core" / "schema.sql", *sorted((ROOT / "core" / "migrations").glob("*.sql"))]
    create = re.compile(r"\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?\"?(\w+)", re.IGNORECASE)
    return frozenset(name for source in sources for name in create.findall(source.read_text()))


CORE_TABLES = _core_tables()
# SQL as the project writes it: upper-case keywords, so prose ("split into events") is not taken for SQL.
NAMES_A_CORE_TABLE = re.compile(
    r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE|ON)\s+\"?(" + "|".join(sorted(CORE_TABLES)) + r")\b(?!\.)"
)


def _sql_naming_core_tables(path: Path) -> list[str]:
    """``line: table`` for each string literal of ``path`` (a .py or .sql file) whose SQL names a core table."""
    if path.suffix == ".sql":
        texts = [(n, re.sub(r"--.*", "", line)) for n, line in enumerate(path.read_text().splitlines(), 1)]
    else:
        tree = ast.parse(path.read_text(), str(path))
        texts = [
            (node.lineno, node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        ]
    return [f"{line}: {table}" for line, text in texts for table in NAMES_A_CORE_TABLE.findall(text)]


def test_the_core_tables_are_known():
    assert {"events", "incoming", "outgoing", "parked", "deferred", "blocked", "protocol_state", "kv"} <= CORE_TABLES


def test_no_plugin_reads_or_writes_a_core_table_with_sql_of_its_own():
    files = sorted(path for suffix in ("*.py", "*.sql") for path in (ROOT / "protocols").rglob(suffix))
    found = [f"{path.relative_to(ROOT)}:{hit}" for path in files for hit in _sql_naming_core_tables(path)]
    assert found == [], (
        "plugin SQL names the core's tables (" + ", ".join(sorted(CORE_TABLES)) + "); use the core's functions "
        "(core/eventlog.py, core/queues.py, core/state.py, core/kv.py ...), adding a small named one there if "
        "none fits:\n" + "\n".join(found)
    )


def test_the_core_table_check_sees_sql_in_strings_and_sql_files(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""Split into events the keys open."""\nQ = (\n    "SELECT 1 "\n    "FROM incoming"\n)\n')
    schema = tmp_path / "schema.sql"
    schema.write_text("-- not FROM events\nCREATE TRIGGER t AFTER INSERT ON events BEGIN SELECT 1; END;\n")
    assert _sql_naming_core_tables(module) == ["3: incoming"]
    assert _sql_naming_core_tables(schema) == ["2: events"]
