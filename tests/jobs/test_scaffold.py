"""`tessera plugin new`: the package it writes installs, passes its own tests and lints clean; bad requests write nothing."""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core import distribution
from jobs.cli import cli
from jobs.scaffold.names import plugin_names
from jobs.scaffold.render import FILES, TEMPLATE_SUFFIX, destination, render_files, template_root
from tests.conftest import ROOT

RUFF = Path(sys.executable).with_name("ruff")
MYPY = Path(sys.executable).with_name("mypy")
LONGEST_NAME = "abcdefghijklmnopqrstuvwxyz_01234"  # 32 characters, the most a protocol name may have


def plugin_new(*args: str) -> tuple[int, str]:
    """Run ``tessera plugin new ARGS`` in this process: its exit status and everything it printed."""
    result = CliRunner().invoke(cli, ["plugin", "new", *args])
    return result.exit_code, result.output


def scaffold(directory: Path, name: str = "reactions") -> Path:
    """Write plugin ``name`` under ``directory`` and return its package directory."""
    status, output = plugin_new(name, "--dir", str(directory))
    assert status == 0, output
    return directory / plugin_names(name).distribution


def run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run ``command``; fail with everything it printed unless it exits 0; return its stdout."""
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(command)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def isolated_env(**extra: str) -> dict[str, str]:
    """This process's environment, without what would make a child pytest or pip behave differently."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON", "TESSERA_"))}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **extra}


def register_without_installing(package: Path, site: Path) -> dict[str, str]:
    """The environment that shows ``package`` to Python as pip would, without installing it anywhere.

    A ``.dist-info`` with the entry points of its pyproject.toml (all that
    ``importlib.metadata`` reads) in ``site``, and both on PYTHONPATH, with this checkout.
    """
    project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    entry_points = [
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in points.items())
        for group, points in project["entry-points"].items()
    ]
    (info / "entry_points.txt").write_text("\n".join(entry_points))
    # This checkout's Tessera too: the installed one may be another checkout's (a git worktree's main).
    return isolated_env(PYTHONPATH=os.pathsep.join([str(package), str(site), str(ROOT)]))


# --- what it writes -----------------------------------------------------------------------------------------------


def test_it_writes_every_file_and_says_what_each_is_for(tmp_path):
    status, output = plugin_new("reactions", "--dir", str(tmp_path))
    assert status == 0, output
    package = tmp_path / "tessera-reactions"
    written = sorted(str(p.relative_to(package)) for p in package.rglob("*") if p.is_file())
    expected = [destination(file, plugin_names("reactions")) for file in FILES]
    assert written == sorted(expected)
    assert [p.name for p in tmp_path.iterdir()] == ["tessera-reactions"]  # no staging directory left over
    for path in expected:
        assert path in output
    assert "pip install -e" in output.splitlines()[-1]


def test_the_plugin_depends_on_tesseras_own_distribution_not_the_stranger_called_tessera(tmp_path):
    ours = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    assert ours == distribution.NAME != "tessera"
    project = tomllib.loads((scaffold(tmp_path) / "pyproject.toml").read_text())["project"]
    [dependency] = project["dependencies"]
    assert re.fullmatch(rf"{re.escape(ours)}(>=[0-9][0-9.]*)?", dependency), dependency


def test_the_generated_tests_pass_with_the_plugin_registered_but_not_installed(tmp_path):
    """The default suite's variant of the install test below: same generated tests, no venv, no pip."""
    package = scaffold(tmp_path)
    env = register_without_installing(package, tmp_path / "site")
    started = time.monotonic()
    output = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=package, env=env)
    print(f"generated suite: {time.monotonic() - started:.1f} s")
    assert "8 passed" in output, output


def readme_script(package: Path, python: Path) -> str:
    """The generated README's commands, second ``sh`` block, as a bash script with ``tessera`` run by ``python``."""
    commands = (package / "README.md").read_text().split("```sh\n")[2].split("```")[0]
    # `python -m jobs` is the `tessera` script (jobs.cli:main), which a throwaway environment has not installed.
    return f'set -e\ntessera() {{ {shlex.quote(str(python))} -m jobs "$@"; }}\n{commands}'


def test_the_readme_commands_work_with_the_plugin_registered_but_not_installed(tmp_path):
    """The default suite's variant of the README half of the install test below: a new database needs its key."""
    package = scaffold(tmp_path)
    env = register_without_installing(package, tmp_path / "site")
    work = tmp_path / "work"
    work.mkdir()
    shown = run(["bash", "-c", readme_script(package, Path(sys.executable))], cwd=work, env=env)
    assert shown.rstrip().endswith("hello"), shown
    assert (work / "notes.key").stat().st_mode & 0o077 == 0, "the key the README makes is readable by others"


@pytest.mark.parametrize("name", ["reactions", "q", LONGEST_NAME])
def test_the_generated_code_is_ruff_clean_and_formatted_whatever_the_name_length(tmp_path, name):
    package = scaffold(tmp_path, name)
    run([str(RUFF), "check", "--no-cache", "."], cwd=package)
    run([str(RUFF), "format", "--check", "--no-cache", "."], cwd=package)


def test_every_generated_function_is_fully_annotated(tmp_path):
    package = scaffold(tmp_path)
    unannotated = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            missing = [a.arg for a in arguments if a.annotation is None and a.arg not in ("self", "cls")]
            if missing or node.returns is None:
                unannotated.append(f"{path.relative_to(package)}:{node.lineno} {node.name}")
    assert not unannotated


# --- what it refuses, leaving nothing behind ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, reason",
    [
        ("Reactions", "must be 1-32 lowercase letters"),
        ("9lives", "must be 1-32 lowercase letters"),
        ("my-plugin", "must be 1-32 lowercase letters"),
        (LONGEST_NAME + "5", "must be 1-32 lowercase letters"),
        ("class", "Python keyword or builtin"),
        ("list", "Python keyword or builtin"),
        ("example", "already installed (package protocols.example)"),
        ("status", "`tessera status` is already a command"),
        ("json", "a Python module named 'json' is already importable"),
        ("pytest", "a Python module named 'pytest' is already importable"),
        ("cqrs", "would be distributed as tessera-cqrs, Tessera's own name"),
    ],
)
def test_a_bad_name_is_refused_on_one_line_and_writes_nothing(tmp_path, name, reason):
    status, output = plugin_new(name, "--dir", str(tmp_path))
    assert status == 1
    assert output.startswith("Error: ") and output.count("\n") == 1 and reason in output, output
    assert list(tmp_path.iterdir()) == []


def test_a_non_empty_target_is_refused_and_left_as_it_was(tmp_path):
    existing = tmp_path / "tessera-reactions" / "notes.txt"
    existing.parent.mkdir()
    existing.write_text("mine")
    status, output = plugin_new("reactions", "--dir", str(tmp_path))
    assert status == 1 and "already exists and is not an empty directory" in output, output
    assert [p.name for p in existing.parent.iterdir()] == ["notes.txt"] and existing.read_text() == "mine"
    assert [p.name for p in tmp_path.iterdir()] == ["tessera-reactions"]


def test_an_empty_target_directory_is_filled(tmp_path):
    (tmp_path / "tessera-reactions").mkdir()
    assert (scaffold(tmp_path) / "reactions" / "__init__.py").is_file()


def test_running_twice_refuses_the_second_time_and_keeps_the_first(tmp_path):
    package = scaffold(tmp_path)
    before = {p: p.read_bytes() for p in package.rglob("*") if p.is_file()}
    status, output = plugin_new("reactions", "--dir", str(tmp_path))
    assert status == 1 and "already exists" in output, output
    assert {p: p.read_bytes() for p in package.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["tessera-reactions"]


def test_a_failure_while_writing_leaves_no_directory_behind(tmp_path, monkeypatch):
    real_write_text = Path.write_text
    written: list[Path] = []

    def fail_on_the_fourth_file(path: Path, *args: Any, **kwargs: Any) -> int:
        written.append(path)
        if len(written) == 4:
            raise OSError(28, "No space left on device", str(path))
        return real_write_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", fail_on_the_fourth_file)
    status, output = plugin_new("reactions", "--dir", str(tmp_path))
    assert status == 1 and "No space left on device" in output, output
    assert list(tmp_path.iterdir()) == []


def test_a_missing_parent_directory_is_created(tmp_path):
    assert (scaffold(tmp_path / "src" / "plugins") / "pyproject.toml").is_file()


# --- the templates ship, and the guide tells the same story -----------------------------------------------------


def test_every_template_is_listed_and_shipped_as_package_data():
    root = Path(str(template_root()))
    templates = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert templates == sorted(f"{file.source}{TEMPLATE_SUFFIX}" for file in FILES)
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    globs = package_data["jobs.scaffold"]
    unshipped = [t for t in templates if not any(fnmatch.fnmatch(f"template/{t}", g) for g in globs)]
    assert not unshipped, f"pyproject.toml's package-data for jobs.scaffold misses {unshipped}"


def test_every_placeholder_is_filled():
    for text in render_files(plugin_names("reactions")).values():
        assert "${" not in text


def test_the_guide_tutorial_names_every_file_the_command_writes():
    guide = (ROOT / "docs" / "plugin-guide.md").read_text()
    tutorial = guide.split("\n## ")[1]
    assert tutorial.startswith("Your first plugin"), "the tutorial is the guide's first section"
    assert "tessera plugin new reactions" in tutorial
    missing = [d for d in (destination(f, plugin_names("reactions")) for f in FILES) if f"`{d}`" not in tutorial]
    assert not missing, f"the tutorial does not mention {missing}"


# --- for real: a throwaway venv, pip install -e, the generated tests, `tessera plugins` -------------------------------


def throwaway_venv(directory: Path) -> Path:
    """A venv seeing this one's packages (Tessera included) through a .pth file, so nothing is installed here.

    ``--system-site-packages`` would show the base interpreter's packages,
    not this venv's, so the venv's own site directory is added instead.  The
    build needs setuptools (seen from here) and, before setuptools 70.1,
    ``wheel``, which is installed into the throwaway venv when missing here.
    """
    run([sys.executable, "-m", "venv", "--without-pip", str(directory)], cwd=directory.parent)
    python = directory / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    theirs = Path(run([str(python), "-c", purelib], cwd=directory).strip())
    ours = run([sys.executable, "-c", purelib], cwd=directory).strip()
    (theirs / "_tessera_parent_venv.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    has_wheel = run(
        [str(python), "-c", "import importlib.util as u; print(u.find_spec('wheel') is not None)"], cwd=directory
    )
    if has_wheel.strip() == "False":
        run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "wheel"],
            cwd=directory,
            env=isolated_env(),
        )
    return python


@pytest.mark.slow
def test_pip_install_e_then_pytest_passes_at_once_and_the_readme_commands_work(tmp_path):
    started = time.monotonic()
    package = scaffold(tmp_path)
    python = throwaway_venv(tmp_path / "venv")
    venv_ready = time.monotonic()
    pip_install = ["install", "--no-deps", "--no-build-isolation", "-e", str(package)]
    run([sys.executable, "-m", "pip", "--python", str(python), *pip_install], cwd=tmp_path, env=isolated_env())
    installed = time.monotonic()
    output = run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=package, env=isolated_env())
    assert "8 passed" in output, output
    tested = time.monotonic()
    listing = run([str(python), "-m", "jobs", "plugins"], cwd=tmp_path, env=isolated_env())
    assert "protocol reactions (reactions): notes posted to topics" in listing, listing
    listed = time.monotonic()
    assert (
        run(["bash", "-c", readme_script(package, python)], cwd=tmp_path, env=isolated_env()).rstrip().endswith("hello")
    )
    print(
        f"venv {venv_ready - started:.1f} s, pip install -e {installed - venv_ready:.1f} s, "
        f"pytest {tested - installed:.1f} s, tessera plugins {listed - tested:.1f} s, "
        f"README commands {time.monotonic() - listed:.1f} s"
    )


@pytest.mark.slow
def test_the_generated_code_passes_mypy_strict(tmp_path):
    package = scaffold(tmp_path)
    env = isolated_env(MYPYPATH=str(ROOT))
    command = [str(MYPY), "--strict", "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"), "."]
    proc = subprocess.run(command, cwd=package, env=env, capture_output=True, text=True)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert not errors, proc.stdout


def packaged_copy_of_this_checkout(target: Path) -> Path:
    """What pip builds Tessera from, copied from this checkout, so the build's leftovers (build/, *.egg-info) land
    in the copy, not in the checkout."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {pattern.rstrip("*") for pattern in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    leftovers = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.db", "*.db-*")
    for name in packages:
        shutil.copytree(ROOT / name, target / name, ignore=leftovers)
    for name in ("pyproject.toml", project["project"]["readme"]):
        shutil.copy(ROOT / name, target / name)
    return target


@pytest.mark.slow
def test_the_plugin_installs_into_a_fresh_venv_with_this_checkout_as_its_tessera(tmp_path):
    """No Tessera in the venv beforehand: pip takes the dependency from this checkout, never the index's `tessera`."""
    package = scaffold(tmp_path)
    started = time.monotonic()
    run([sys.executable, "-m", "venv", str(tmp_path / "venv")], cwd=tmp_path)
    python = tmp_path / "venv" / "bin" / "python"
    env = isolated_env()
    before = run([str(python), "-m", "pip", "list", "--format=freeze"], cwd=tmp_path, env=env)
    assert distribution.NAME not in before.lower()
    checkout = packaged_copy_of_this_checkout(tmp_path / "checkout")
    run([str(python), "-m", "pip", "install", "--quiet", str(checkout), str(package)], cwd=tmp_path, env=env)
    installed = time.monotonic()
    listed = run([str(python), "-m", "pip", "list", "--format=freeze"], cwd=tmp_path, env=env).lower().split()
    names = {line.split("==")[0] for line in listed}
    assert {distribution.NAME, "tessera-reactions"} <= names
    assert "tessera" not in names and "flask" not in names, listed  # the index's `tessera` pulls Flask
    # The installed `tessera` script finds the plugin through its entry point, from outside any checkout.
    plugins = run([str(tmp_path / "venv" / "bin" / "tessera"), "plugins"], cwd=tmp_path, env=env)
    assert "protocol reactions (reactions): notes posted to topics" in plugins, plugins
    print(f"venv and pip install {installed - started:.1f} s")
