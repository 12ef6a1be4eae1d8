"""Canonical JSON: the declared encoding of event payloads, and the strict decoder for peer input.

Keys are sorted, separators are compact, text is UTF-8 without escaping
non-ASCII, and only JSON's exact types are allowed (no floats: a float's
text form is not stable across producers, so a replay could differ by a
digit).  Bytes are not JSON; protocols encode them as hex or base64 first.

Both directions also refuse what SQLite, Parquet or a hash cannot hold:
integers beyond signed 64 bits, text with a lone UTF-16 surrogate (it has no
UTF-8 form), and nesting deeper than :data:`MAX_DEPTH`.  :func:`dumps` raises
:class:`EncodingError` naming the path; :func:`loads_untrusted`, for bytes a
peer sent, raises :class:`MalformedInput` naming the field, so the item is
parked at once instead of failing later as if it were a bug.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.errors import EncodingError, MalformedInput

MAX_DEPTH = 32
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# 19 digits hold every signed 64-bit integer; a longer literal is refused before Python converts it.
_MAX_INT_DIGITS = 20

_encoder = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)

_SCALARS = (str, int, bool, type(None))


# --- encoding ------------------------------------------------------------------


def _flat(value: dict[str, Any]) -> bool:
    """True for the common payload: string keys, scalar values (checked without recursion)."""
    for key, item in value.items():
        kind = type(item)
        if type(key) is not str or kind not in _SCALARS or (kind is int and not INT64_MIN <= item <= INT64_MAX):
            return False
    return True


def _check(value: Any, path: str, depth: int = 0) -> None:
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise EncodingError(
                f"{path} is {_int_text(value)}, outside the signed 64-bit integer range; "
                "SQLite and Parquet cannot store it"
            )
        return
    if type(value) is dict and _flat(value):
        return
    if isinstance(value, float):
        raise EncodingError(f"{path} is a float ({value!r}); store integers (e.g. milliseconds, cents) instead")
    if isinstance(value, (list, tuple, dict)) and depth >= MAX_DEPTH:
        raise EncodingError(f"{path} is nested deeper than {MAX_DEPTH} levels; flatten the payload")
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check(item, f"{path}[{i}]", depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise EncodingError(f"{path} has a non-string key {key!r}; JSON object keys are strings")
            _check(item, f"{path}.{key}", depth + 1)
        return
    raise EncodingError(f"{path} is a {type(value).__name__}, which canonical JSON cannot carry; encode it first")


def dumps(value: Any) -> bytes:
    """Encode ``value`` as canonical JSON bytes (raises EncodingError)."""
    _check(value, "payload")
    try:
        return _encoder.encode(value).encode("utf-8")
    except UnicodeEncodeError:
        # Rare, so the text is searched only now rather than on every encode.
        raise EncodingError(_surrogate_problem(value, "payload")) from None


def _surrogate_problem(value: Any, path: str) -> str:
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str) and _has_lone_surrogate(item):
            return f"{where} holds a lone UTF-16 surrogate, which has no UTF-8 form; fix the text at its source"
        if isinstance(item, dict):
            if any(_has_lone_surrogate(key) for key in item):
                return f"{where} has a key with a lone UTF-16 surrogate, which has no UTF-8 form"
            stack.extend((child, f"{where}.{key}") for key, child in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
    return f"{path} holds text that has no UTF-8 form"


def _has_lone_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _int_text(value: int) -> str:
    return f"an integer of {value.bit_length()} bits" if value.bit_length() > 128 else str(value)


def loads(data: bytes | str) -> Any:
    """Decode canonical JSON the core wrote itself (event payloads): fast, not for peer input."""
    return json.loads(data)


# --- decoding peer input ----------------------------------------------------------


class _Refused:
    """A literal the decoder read but must refuse; the walk reports it with its field path."""

    __slots__ = ("detail",)

    def __init__(self, detail: str):
        self.detail = detail


def _parse_int(text: str) -> int | _Refused:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        return _Refused(f"an integer of {len(text.lstrip('-'))} digits is outside the signed 64-bit range")
    return int(text)


def _parse_float(text: str) -> _Refused:
    return _Refused(f"{text[:30]} is not an integer; numbers with a fraction or exponent are not accepted")


def _parse_constant(name: str) -> _Refused:
    return _Refused(f"{name} is not an integer (and not JSON)")


def first_repeated_key(pairs: list[tuple[str, Any]]) -> str | None:
    """The first key a JSON object repeats, or None: parsers disagree on which duplicate wins,
    so two readers of one object could see two different messages (an ``object_pairs_hook`` check)."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        key = first_repeated_key(pairs)
        raise MalformedInput(key, f"the key {key!r:.40} appears more than once")
    return result


_peer_decoder = json.JSONDecoder(
    parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant, object_pairs_hook=_unique_keys
)


def loads_untrusted(data: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Decode JSON a peer sent, refusing anything the core cannot store, hash or replay.

    Refused, with :class:`MalformedInput` naming the field: bytes that are not
    UTF-8, text that is not JSON, a key given twice, a number that is not an
    integer (fractions, exponents, NaN, Infinity), an integer beyond signed
    64 bits, a lone UTF-16 surrogate, and arrays or objects nested deeper
    than ``max_depth``.
    """
    text = _as_text(data)
    try:
        value = _peer_decoder.decode(text)
    except RecursionError:
        raise MalformedInput(locate_deep_nesting(text, max_depth), f"nested deeper than {max_depth} levels") from None
    except MalformedInput:
        raise
    except ValueError as exc:
        raise MalformedInput(None, f"not JSON: {exc}") from None
    _walk(value, max_depth)
    return value


def _as_text(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedInput(None, f"not UTF-8 (byte {exc.start} cannot start or continue a character)") from None


def _walk(value: Any, max_depth: int) -> None:
    """Check every value of a decoded document without recursion (see :func:`loads_untrusted`)."""
    stack: list[tuple[Any, str | None, int]] = [(value, None, 0)]
    while stack:
        item, path, depth = stack.pop()
        kind = type(item)
        if kind is str:
            if _has_lone_surrogate(item):
                raise MalformedInput(path, "the text holds a lone UTF-16 surrogate, which has no UTF-8 form")
        elif kind is int:
            if not INT64_MIN <= item <= INT64_MAX:
                raise MalformedInput(path, f"{item} is outside the signed 64-bit integer range")
        elif kind is _Refused:
            raise MalformedInput(path, item.detail)
        elif kind is list or kind is dict:
            if depth >= max_depth:
                raise MalformedInput(_top(path), f"nested deeper than {max_depth} levels")
            stack.extend(_children(item, path, depth + 1))


def _children(container: list[Any] | dict[str, Any], path: str | None, depth: int) -> list[tuple[Any, str | None, int]]:
    if isinstance(container, list):
        return [(child, f"{path or ''}[{i}]", depth) for i, child in enumerate(container)]
    for key in container:
        if _has_lone_surrogate(key):
            raise MalformedInput(path, "a key holds a lone UTF-16 surrogate, which has no UTF-8 form")
    return [(child, key if path is None else f"{path}.{key}", depth) for key, child in container.items()]


def _top(path: str | None) -> str | None:
    """The top-level field of a path (a depth error names where the nesting starts); None inside a root array."""
    if path is None or path.startswith("["):
        return None
    return re.split(r"[.\[]", path, maxsplit=1)[0]


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]')


def locate_deep_nesting(text: str, max_depth: int) -> str | None:
    """The top-level field of JSON ``text`` whose value nests deeper than ``max_depth`` (None if none, or if
    the text is not an object): for text too deep for the parser to say.

    ``max_depth`` is how many arrays or objects may nest, the outermost included, as in
    :func:`loads_untrusted`.  Only tokens are scanned (a string is one token), so it needs
    no recursion.
    """
    depth, last_string, field = 0, None, None
    for token in _TOKENS.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth > max_depth:
                return field if text.lstrip().startswith("{") else None
        elif mark in "]}":
            depth -= 1
        elif mark == ":" and depth == 1:
            field = last_string
        elif depth == 1 and mark.startswith('"'):
            last_string = json.loads(mark)
    return None
