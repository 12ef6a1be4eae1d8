"""tree-math.json: array-tree index math of every node (RFC 9420 appendix C)."""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls.conformance.checkers._hex import compare
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.tree import math as tm

KEYS = frozenset({"n_leaves", "n_nodes", "root", "left", "right", "parent", "sibling"})


def check(entry: dict[str, Any]) -> list[Failure]:
    n = entry["n_leaves"]
    failures = compare("n_nodes", tm.node_width(n), entry["n_nodes"]) + compare("root", tm.root(n), entry["root"])
    for name in ("left", "right", "parent", "sibling"):
        function = getattr(tm, name)
        failures += compare(name, [function(x, n) for x in range(entry["n_nodes"])], entry[name])
    return failures
