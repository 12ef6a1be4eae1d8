"""Changing one field of an immutable value on the per-message path.

``attrs.evolve`` re-runs a class's ``__init__`` (converters, validators,
defaults) and introspects its fields at every call: about 20 µs, several
times per message.  Where the new field values are already of the form the
class holds (a secret tree replacing a secret tree), :func:`replaced` copies
the value and sets them directly, with a copier compiled once per class
(straight-line code, no loop over the fields).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import attrs

T = TypeVar("T")

_COPIERS: dict[type, Callable[[Any, dict[str, Any]], Any]] = {}


def replaced(value: T, **changes: Any) -> T:
    """A copy of the frozen attrs ``value`` with ``changes``; no converter or validator runs, so pass final values."""
    cls = type(value)
    copier = _COPIERS.get(cls)
    if copier is None:
        copier = _COPIERS[cls] = _compile_copier(cls)
    return cast(T, copier(value, changes))


def _compile_copier(cls: type) -> Callable[[Any, dict[str, Any]], Any]:
    """``copier(value, changes)``: a new instance of ``cls`` with every field of ``value`` but those in ``changes``."""
    names = tuple(field.name for field in attrs.fields(cast(Any, cls)))
    lines = ["def copier(value, changes):", "    copy = new(cls)"]
    for name in names:
        if not name.isidentifier():
            raise TypeError(f"{cls.__name__}.{name} is not a plain field name")
        lines.append(f"    set_(copy, {name!r}, changes[{name!r}] if {name!r} in changes else value.{name})")
    lines += [
        "    if not names.issuperset(changes):",
        "        unknown = sorted(set(changes) - set(names))[0]",
        "        raise TypeError(f'{cls.__name__} has no field {unknown!r}')",
        "    return copy",
    ]
    scope: dict[str, Any] = {"new": object.__new__, "set_": object.__setattr__, "cls": cls, "names": frozenset(names)}
    exec("\n".join(lines), scope)
    return cast(Callable[[Any, dict[str, Any]], Any], scope["copier"])
