"""Plugins keep per-database state on their service object, and type the core's handles.

Two scans of every module under protocols/ (plugins and the shared libraries):

- no module-level mutable state: a dict, list or set bound at module level and
  changed at run time, a weak dictionary or set (a cache keyed by database or
  runtime), a ``global`` statement, or an lru_cache keyed by one of the core's
  handles.  What a plugin keeps per database belongs to the object its
  ``open_service(app)`` returns (docs/plugin-guide.md).  Read-only tables stay
  module constants; the few containers that truly are per process are listed
  below with the reason;
- no ``ctx``, ``runtime``, ``app``, ``conn`` or ``db`` parameter typed ``Any``:
  core/contract.py types them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest

from tests.conftest import ROOT

PROTOCOLS = ROOT / "protocols"
HANDLES = frozenset({"ctx", "runtime", "app", "conn", "db"})
_CONTAINERS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter"})
_WEAK = frozenset({"WeakKeyDictionary", "WeakValueDictionary", "WeakSet"})
_MUTATORS = frozenset(
    {"append", "add", "pop", "popitem", "update", "setdefault", "clear", "remove", "discard", "extend", "insert"}
)
_CACHES = frozenset({"lru_cache", "cache"})

#: Module-level containers that are per process on purpose, by (module path, name), with the reason.
ALLOWED = {
    ("protocols/libraries/mls/codec/structs.py", "CLASS_CODECS"): "the codec of each Python class: code, not data",
    ("protocols/libraries/mls/codec/structs.py", "_ENUM_CODECS"): "the codec of each enum class: code, not data",
    ("protocols/libraries/mls/values.py", "_COPIERS"): "a compiled copier for each attrs class: code, not data",
    ("protocols/libraries/mls/crypto/labels.py", "_ENCODED_LABELS"): (
        "each label's encoding, the same for every database (bounded at 256): a pure function's memo"
    ),
    ("protocols/libraries/mls/ahead.py", "_chains"): "lives in the decrypt-ahead helper process, one per writer",
    ("protocols/libraries/erasable.py", "_PREPARED"): (
        "keyed by key file on disk: a key prepared for a file's next version is that file's, whichever connection"
        " writes it next (taking it checks the file holds it)"
    ),
    ("protocols/libraries/erasable.py", "_ERASER"): (
        "the process's one erasing thread, whose work is keyed by key file on disk like _PREPARED's: the"
        " erasure a commit handed over is that file's, whichever connection seals its next version"
    ),
    ("protocols/marmot/wire/outer.py", "_keys"): (
        "a bounded memo of a pure derivation keyed by the exporter secret itself: the same secret gives the same"
        " keys in any database"
    ),
    ("protocols/libraries/mls/messages/framing.py", "CONTENT"): "a codec, whose per-class tables are code",
    ("protocols/libraries/mls/messages/framing.py", "_TAG_IF_COMMIT"): "a codec, whose per-class tables are code",
    ("protocols/libraries/mls/messages/mls_message.py", "WIRE_FORMATS"): "a codec, whose per-class tables are code",
    ("protocols/libraries/mls/group/snapshot_tree.py", "RECENT_TREES"): (
        "a bounded memo of a pure codec (ratchet tree <-> its encoding), keyed by the content itself"
    ),
}


def _modules() -> list[tuple[str, ast.Module]]:
    modules = [
        (str(path.relative_to(ROOT)), ast.parse(path.read_text(), str(path)))
        for path in sorted(PROTOCOLS.rglob("*.py"))
    ]
    assert len(modules) > 100, "the scan must see every plugin module"
    return modules


def _called(node: ast.expr) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _module_containers(tree: ast.Module) -> dict[str, str]:
    """Names bound at module level to a mutable container: name -> what it is."""
    found = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        displays = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
        kind = type(value).__name__ if isinstance(value, displays) else _called(value)
        if kind in _CONTAINERS | _WEAK or isinstance(value, displays):
            found.update({target.id: str(kind) for target in targets if isinstance(target, ast.Name)})
    return found


def _stateful_classes(modules: list[tuple[str, ast.Module]]) -> set[str]:
    """Classes of protocols/ whose ``__init__`` gives each instance a container of its own (a cache, say)."""
    found = set()
    for _, tree in modules:
        for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
            for init in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"):
                for node in ast.walk(init):
                    value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
                    if value is not None and (
                        isinstance(value, ast.Dict | ast.List | ast.Set) or _called(value) in _CONTAINERS
                    ):
                        found.add(cls.name)
    return found


def _mutated(node: ast.AST) -> ast.expr | None:
    """The container a statement or call changes in place (``x[k] = v``, ``del x[k]``, ``x.append(v)``), if any."""
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        for target in targets:
            if isinstance(target, ast.Subscript):
                return target.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
        return node.func.value
    return None


def _cached_by_handle(function: ast.FunctionDef) -> bool:
    decorators = {_called(d) or getattr(d, "id", getattr(d, "attr", None)) for d in function.decorator_list}
    return bool(decorators & _CACHES and HANDLES & {arg.arg for arg in function.args.args})


def module_state(modules: list[tuple[str, ast.Module]]) -> Iterator[tuple[str, str, str]]:
    """``(module, name, why)`` for each piece of module-level mutable state."""
    containers = {path: _module_containers(tree) for path, tree in modules}
    public = {name: path for path, names in containers.items() for name in names}
    stateful = _stateful_classes(modules)
    for path, tree in modules:
        for statement in tree.body:
            if isinstance(statement, ast.Assign) and _called(statement.value) in stateful:
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        yield path, target.id, f"a module-level {_called(statement.value)}, which keeps state"
        for name, kind in containers[path].items():
            if kind in _WEAK:
                yield path, name, f"a module-level {kind}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                yield from ((path, name, "a global statement") for name in node.names)
            if isinstance(node, ast.FunctionDef) and _cached_by_handle(node):
                yield path, node.name, "an lru_cache keyed by a database or runtime"
            changed = _mutated(node)
            if isinstance(changed, ast.Name) and changed.id in containers[path]:
                yield path, changed.id, "a module-level container changed at run time"
            elif isinstance(changed, ast.Attribute) and isinstance(changed.value, ast.Name) and changed.attr in public:
                yield public[changed.attr], changed.attr, f"a module-level container changed from {path}"


def any_typed_handles(modules: list[tuple[str, ast.Module]]) -> Iterator[str]:
    for path, tree in modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = node.args
                for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                    if arg.arg in HANDLES and arg.annotation is not None and ast.unparse(arg.annotation) == "Any":
                        yield f"{path}:{node.lineno} {node.name}({arg.arg}: Any)"


@pytest.fixture(scope="module")
def modules() -> list[tuple[str, ast.Module]]:
    return _modules()


def test_no_plugin_keeps_module_level_mutable_state(modules):
    found = sorted({(path, name, why) for path, name, why in module_state(modules) if (path, name) not in ALLOWED})
    assert not found, "keep these on the plugin's service object (open_service):\n" + "\n".join(map(str, found))


def test_every_allowed_container_still_exists(modules):
    """An entry whose container is gone (moved to a service object) leaves the list too."""
    containers = {(path, name) for path, tree in modules for name in _module_containers(tree)}
    containers |= {(path, name) for path, name, _ in module_state(modules)}
    assert set(ALLOWED) <= containers


def test_no_plugin_types_a_core_handle_as_any(modules):
    found = list(any_typed_handles(modules))
    assert not found, "annotate with core.contract's App, Runtime, Context, Database, Connection:\n" + "\n".join(found)


_STATEFUL = """
import weakref
from collections import OrderedDict
from functools import lru_cache

_SERVICES = weakref.WeakKeyDictionary()
_seen = set()
_recent = OrderedDict()
TABLE = {"a": 1}
_counter = 0

def remember(db, key):
    _seen.add((db.path, key))
    _recent[key] = db

def bump():
    global _counter
    _counter += 1

@lru_cache(maxsize=8)
def store_of(runtime):
    return runtime.db

def read(key):
    return TABLE[key]

def handle(ctx: Any, db: "Database", conn: Any) -> None: ...
"""


def test_the_scans_find_what_they_look_for():
    modules = [("protocols/fake.py", ast.parse(_STATEFUL))]
    assert {(name, why) for _, name, why in module_state(modules)} == {
        ("_SERVICES", "a module-level WeakKeyDictionary"),
        ("_seen", "a module-level container changed at run time"),
        ("_recent", "a module-level container changed at run time"),
        ("_counter", "a global statement"),
        ("store_of", "an lru_cache keyed by a database or runtime"),
    }
    assert [line.split(" ", 1)[1] for line in any_typed_handles(modules)] == ["handle(ctx: Any)", "handle(conn: Any)"]
