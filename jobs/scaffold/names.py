"""Which names ``tessera plugin new`` accepts, and what a plugin derives from its protocol name.

The protocol name is also the plugin's Python package, its table prefix and its
``tessera`` command group, so a name is refused when any of those would clash.
"""

from __future__ import annotations

import builtins
import importlib.util
import keyword
import sys
from collections.abc import Collection, Mapping

import attrs

from core import distribution
from core.errors import InvalidInput
from core.protocol import Protocol


@attrs.frozen
class PluginNames:
    """The names of one new plugin.

    Attributes:
        protocol: the protocol name, also the package, table prefix and command group.
        distribution: the pip name, and the directory the package is written to.
        requirement: the dependency on the Tessera that wrote it.
    """

    protocol: str
    distribution: str
    requirement: str


def plugin_names(name: str) -> PluginNames:
    """The names a plugin called ``name`` (already checked) goes by."""
    return PluginNames(
        protocol=name,
        distribution=plugin_distribution(name),
        requirement=distribution.requirement(),
    )


def plugin_distribution(name: str) -> str:
    """The pip name of plugin ``name``: ``tessera-`` and the name with dashes for underscores."""
    return f"tessera-{name.replace('_', '-')}"


def check_name(name: str, *, protocols: Mapping[str, Protocol], commands: Collection[str]) -> None:
    """Refuse ``name`` with InvalidInput saying why and what to do, unless a new plugin may take it.

    :param protocols: the installed protocols, by name.
    :param commands: the ``tessera`` top-level commands.
    """
    _protocol_rule(name)
    if keyword.iskeyword(name) or name in dir(builtins):
        raise InvalidInput(
            f"{name!r} is a Python keyword or builtin, which a package of that name would break or shadow; "
            "pick another name"
        )
    if name in protocols:
        raise InvalidInput(
            f"a protocol named {name!r} is already installed (package {protocols[name].package}); pick another name"
        )
    if plugin_distribution(name) == distribution.NAME:
        raise InvalidInput(
            f"a plugin named {name!r} would be distributed as {distribution.NAME}, Tessera's own name; "
            "pick another name"
        )
    if name in commands:
        raise InvalidInput(
            f"`tessera {name}` is already a command, and the plugin's command group would replace it; pick another name"
        )
    if name in sys.stdlib_module_names or importlib.util.find_spec(name) is not None:
        raise InvalidInput(
            f"a Python module named {name!r} is already importable, and the plugin's package would clash with it; "
            "pick another name"
        )


def _protocol_rule(name: str) -> None:
    """Check ``name`` with Protocol's own validator, so the two rules can never drift apart."""
    field = attrs.fields(Protocol).name
    if field.validator is not None:
        field.validator(None, field, name)
