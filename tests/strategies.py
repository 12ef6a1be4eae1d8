"""Hypothesis strategies shared by the tests: hostile peer input, and sequences of operations.

The hostile-input strategies draw JSON *text* fragments (what a peer puts on
the wire), since several of these values cannot be produced by a well-behaved
encoder: integers of thousands of digits, lone UTF-16 surrogates as
``\\ud800`` escapes, nesting deeper than any parser's recursion limit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from hypothesis import strategies as st

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def nested(depth: int, kind: str = "[") -> str:
    """JSON text of ``depth`` nested arrays (or objects) around a 1."""
    if kind == "[":
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def as_json(value: object) -> str:
    # ensure_ascii writes a lone surrogate as a \\udXXX escape, as a hostile peer would.
    return json.dumps(value, ensure_ascii=True)


#: Timestamps a 64-bit signed integer cannot hold.
timestamps_too_big = st.integers(min_value=2**63, max_value=2**80)

#: Integers beyond 64 bits, both signs, some with more digits than Python converts by default.
integers_beyond_64_bits = st.one_of(
    st.integers(min_value=INT64_MAX + 1, max_value=2**300).map(str),
    st.integers(min_value=-(2**300), max_value=INT64_MIN - 1).map(str),
    st.integers(min_value=4301, max_value=20_000).map(lambda digits: "9" * digits),
)

#: Strings holding a lone UTF-16 surrogate (no UTF-8 form, so no hash or storage form either).
lone_surrogates = st.builds(
    lambda before, surrogate, after: before + surrogate + after,
    st.text(max_size=4),
    st.integers(0xD800, 0xDFFF).map(chr),
    st.text(max_size=4),
)


def nesting_deeper_than(limit: int) -> st.SearchStrategy[str]:
    """JSON text nested deeper than ``limit``, up to far beyond Python's recursion limit."""
    depths = st.one_of(st.integers(limit + 1, limit + 40), st.integers(1_000, 100_000))
    return st.builds(nested, depths, st.sampled_from(["[", "{"]))


#: JSON values of every type, to put where another type belongs.
any_json_type = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.text(max_size=6),
    st.lists(st.integers(0, 9), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(0, 9), max_size=2),
).map(as_json)

#: Numbers that are not integers, and the constants Python's json accepts though JSON does not.
non_integer_numbers = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr).filter(lambda text: "e" in text or "." in text),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-0.0"]),
)


def hostile_values(limit: int) -> st.SearchStrategy[str]:
    """Any hostile JSON fragment: too-big integers or timestamps, lone surrogates, deep nesting."""
    return st.one_of(
        timestamps_too_big.map(str),
        integers_beyond_64_bits,
        lone_surrogates.map(as_json),
        st.lists(lone_surrogates, min_size=1, max_size=2).map(as_json),
        nesting_deeper_than(limit),
        non_integer_numbers,
    )


def operations(
    arguments: Mapping[str, st.SearchStrategy[object]], *, min_size: int = 0, max_size: int
) -> st.SearchStrategy[list[tuple[str, object]]]:
    """Lists of ``(name, argument)`` steps, each step's argument drawn from ``arguments[name]``."""
    steps = [st.tuples(st.just(name), argument) for name, argument in arguments.items()]
    return st.lists(st.one_of(*steps), min_size=min_size, max_size=max_size)
