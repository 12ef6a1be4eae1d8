"""Canonical JSON: the declared encoding of event payloads.

Keys are sorted, separators are compact, text is UTF-8 without escaping
non-ASCII, and only JSON's exact types are allowed (no floats: a float's
text form is not stable across producers, so a replay could differ by a
digit).  Bytes are not JSON; protocols encode them as hex or base64 first.
"""

from __future__ import annotations

import json
from typing import Any

from core.errors import EncodingError

_encoder = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


_SCALARS = (str, int, bool, type(None))


def _flat(value: dict) -> bool:
    """True for the common payload: string keys, scalar values (checked without recursion)."""
    for key, item in value.items():
        if type(key) is not str or type(item) not in _SCALARS:
            return False
    return True


def _check(value: Any, path: str) -> None:
    if value is None or isinstance(value, (bool, int, str)):
        return
    if type(value) is dict and _flat(value):
        return
    if isinstance(value, float):
        raise EncodingError(f"{path} is a float ({value!r}); store integers (e.g. milliseconds, cents) instead")
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check(item, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise EncodingError(f"{path} has a non-string key {key!r}; JSON object keys are strings")
            _check(item, f"{path}.{key}")
        return
    raise EncodingError(f"{path} is a {type(value).__name__}, which canonical JSON cannot carry; encode it first")


def dumps(value: Any) -> bytes:
    """Encode ``value`` as canonical JSON bytes (raises EncodingError)."""
    _check(value, "payload")
    return _encoder.encode(value).encode("utf-8")


def loads(data: bytes | str) -> Any:
    """Decode canonical (or any) JSON bytes."""
    return json.loads(data)
