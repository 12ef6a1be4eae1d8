"""Changing one field of an immutable value on the per-message path.

``attrs.evolve`` re-runs a class's ``__init__`` (converters, validators,
defaults) and introspects its fields at every call: about 20 µs, several
times per message.  Where the new field values are already of the form the
class holds (a secret tree replacing a secret tree), :func:`replaced` copies
the value and sets them directly.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import attrs

T = TypeVar("T")

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def replaced(value: T, **changes: Any) -> T:
    """A copy of the frozen attrs ``value`` with ``changes``; no converter or validator runs, so pass final values."""
    cls = type(value)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(field.name for field in attrs.fields(cast(Any, cls)))
    unknown = changes.keys() - set(names)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
    copy = object.__new__(cls)
    for name in names:
        object.__setattr__(copy, name, changes[name] if name in changes else getattr(value, name))
    return copy
