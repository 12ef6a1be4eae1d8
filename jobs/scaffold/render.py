"""The files of a new plugin, rendered from the templates shipped in ``template/``.

A template is ``template/<source>.tmpl``; ``${name}``-style placeholders in it
stand for the plugin's names (:func:`placeholders`).  ``NAME`` in a file's
destination stands for the protocol name.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from string import Template

import attrs

from jobs.scaffold.names import PluginNames

TEMPLATE_SUFFIX = ".tmpl"


@attrs.frozen
class PluginFile:
    """One file a new plugin gets.

    Attributes:
        source: its template, relative to ``template/`` and without the suffix.
        destination: where it goes in the new package directory.
        purpose: what the file is for, one line.
    """

    source: str
    destination: str
    purpose: str


FILES = (
    PluginFile(
        "pyproject.toml", "pyproject.toml", "the distribution: dependency, entry point, pytest and ruff settings"
    ),
    PluginFile("README.md", "README.md", "how to install, test and run the plugin"),
    PluginFile("gitignore", ".gitignore", "keeps build, test and database leftovers out of version control"),
    PluginFile("package/__init__.py", "NAME/__init__.py", "the @hookimpl functions Tessera calls"),
    PluginFile("package/schema.sql", "NAME/schema.sql", "the table the plugin owns, with an inline INDEX"),
    PluginFile("package/handlers.py", "NAME/handlers.py", "the wire format: encode, decode and a pure handler"),
    PluginFile("package/projectors.py", "NAME/projectors.py", "the idempotent projector that fills the table"),
    PluginFile("package/queries.py", "NAME/queries.py", "reads of the table"),
    PluginFile("package/cli.py", "NAME/cli.py", "the `NAME` command group with one read command"),
    PluginFile("package/py.typed", "NAME/py.typed", "tells type checkers the package is typed"),
    PluginFile("tests/test_package.py", "tests/test_NAME.py", "the test kit's contract tests and an end-to-end run"),
)


def template_root() -> Traversable:
    """The ``template/`` directory shipped with this package."""
    return resources.files("jobs.scaffold") / "template"


def destination(file: PluginFile, names: PluginNames) -> str:
    """Where ``file`` goes in the package directory of the plugin called ``names``."""
    return file.destination.replace("NAME", names.protocol)


def describe(file: PluginFile, names: PluginNames) -> str:
    """What ``file`` is for, with the plugin's name in it."""
    return file.purpose.replace("NAME", names.protocol)


def placeholders(names: PluginNames) -> dict[str, str]:
    """The values of the templates' placeholders."""
    rows = (f"| `{destination(file, names)}` | {describe(file, names)} |" for file in FILES)
    return {
        "name": names.protocol,
        "distribution": names.distribution,
        "requirement": names.requirement,
        "file_table": "\n".join(rows),
    }


def render_files(names: PluginNames) -> dict[str, str]:
    """Every file of the new plugin: its path in the package directory -> its text."""
    values = placeholders(names)
    return {destination(file, names): _fill(file, values) for file in FILES}


def _fill(file: PluginFile, values: dict[str, str]) -> str:
    text = (template_root() / f"{file.source}{TEMPLATE_SUFFIX}").read_text("utf-8")
    return Template(text).substitute(values)
