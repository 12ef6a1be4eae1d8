"""One setting: its declaration (name, type, default, range, help) and the checks every source's value passes.

The core declares its own settings (:data:`core.settings.SETTINGS`); a plugin
declares its own through the ``register_settings`` hook, under a section named
after the plugin.  Wherever a value comes from (a flag, the environment, the
config file), it is converted and range-checked here, and a bad one is an
:class:`~core.errors.InvalidSetting` naming the setting, where the value came
from, the value and the allowed range.
"""

from __future__ import annotations

from typing import Any, cast

import attrs

from core.errors import InvalidSetting

#: The section of the core's own settings (``[core]`` in the config file, ``TESSERA_<NAME>`` in the environment).
CORE = "core"

_KIND_NOUNS = {int: "an integer", float: "a number", str: "text", bool: "a boolean"}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@attrs.frozen
class Setting:
    """One tunable.

    Attributes:
        name: its name within its section (a dot groups it: ``server.host`` is
            ``[sovereign.server] host`` in the config file).
        default: value when nothing overrides it; its type (int, float, str or
            bool) is the setting's type.
        help: one sentence for the docs and ``tessera settings``.
        minimum, maximum: the allowed range, inclusive (for a text setting, of
            its length; ignored for a boolean); a value outside it is refused.
        section: ``core``, or the name of the plugin that declares it.
        env: the environment variable, when it is not the usual
            ``TESSERA_[<SECTION>_]<NAME>`` (kept for names older than this scheme).
    """

    name: str
    default: Any
    help: str
    minimum: int | float
    maximum: int | float
    section: str = CORE
    env: str | None = None

    @property
    def kind(self) -> type:
        return type(self.default)

    @property
    def env_key(self) -> str:
        if self.env is not None:
            return self.env
        section = "" if self.section == CORE else f"{self.section.upper()}_"
        return f"TESSERA_{section}{self.name.upper().replace('.', '_')}"

    @property
    def key(self) -> str:
        """``section.name``: how ``tessera settings`` and the errors name it."""
        return f"{self.section}.{self.name}"

    def allowed(self) -> str:
        if self.kind is bool:
            return "true or false (1/0, yes/no, on/off in the environment)"
        if self.kind is str:
            return f"text of {self.minimum} to {self.maximum} characters"
        return f"{self.minimum} to {self.maximum}"


@attrs.frozen
class Resolved:
    """A setting's value in force and where it came from.

    Attributes:
        setting: the declaration.
        value: the checked value.
        source: ``default``, the environment variable, ``<config file> [section] key``, or ``--flag``.
    """

    setting: Setting
    value: Any
    source: str


def parse(setting: Setting, source: str, raw: str) -> Any:
    """The value of ``raw`` text (an environment variable's), converted to the setting's type and checked."""
    kind = setting.kind
    try:
        value = _parse_bool(raw) if kind is bool else kind(raw)
    except ValueError:
        raise _wrong_type(setting, source, raw) from None
    check(setting, value, source)
    return value


def _parse_bool(raw: str) -> bool:
    word = raw.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ValueError(raw)


def check(setting: Setting, value: Any, source: str) -> Any:
    """``value`` when it has the setting's type and lies in its range, else an :class:`InvalidSetting`."""
    kind = setting.kind
    if kind is float and type(value) is int:
        value = float(value)
    if type(value) is not kind:
        raise _wrong_type(setting, source, value)
    if kind is bool:
        return value
    measured = len(value) if isinstance(value, str) else cast("int | float", value)
    if not setting.minimum <= measured <= setting.maximum:
        shown = repr(value) if kind is str else str(value)
        raise InvalidSetting(
            f"{source}={shown:.40} is out of range; allowed: {setting.allowed()}{_naming(setting, source)}",
            setting=setting.name,
            value=value,
        )
    return value


def _wrong_type(setting: Setting, source: str, value: Any) -> InvalidSetting:
    return InvalidSetting(
        f"{source} must be {_KIND_NOUNS[setting.kind]}, got {value!r:.40}; allowed: {setting.allowed()}"
        f"{_naming(setting, source)}",
        setting=setting.name,
        value=value,
    )


def _naming(setting: Setting, source: str) -> str:
    """`` (setting marmot.x)`` unless the source already says which setting it is."""
    return "" if setting.name in source or setting.env_key in source else f" (setting {setting.key})"
