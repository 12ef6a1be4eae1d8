"""Full projection rebuilds: export -> partitioned replay (Spark or local) -> shadow -> catch-up -> swap.

The pipeline (:mod:`jobs.rebuild.run`, which imports pyarrow) loads on first use of its names, so a process that
needs only :mod:`jobs.rebuild.workdir` (the tick daemon, at start) does not pay for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobs.rebuild.run import RebuildReport, RebuildRequest, rebuild

__all__ = ["RebuildReport", "RebuildRequest", "rebuild"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("jobs.rebuild.run"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
