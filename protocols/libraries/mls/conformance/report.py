"""What a conformance run found: failures by entry and field, counts by cipher suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

#: How many failures a report keeps in full; the counts still cover every entry.
KEPT_FAILURES = 20


@attrs.frozen
class Failure:
    """One field of one entry that the production code does not reproduce."""

    field: str
    detail: str
    entry: int = -1  # set by the runner, which knows where the entry sits in the file


@attrs.define
class SuiteCounts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0


@attrs.define
class Report:
    """The outcome of one vector file. ``suite`` is None for files whose entries name no cipher suite."""

    file: Path
    vector_type: str
    skip_reason: str | None = None
    suites: dict[int | None, SuiteCounts] = attrs.field(factory=dict)
    failures: list[Failure] = attrs.field(factory=list)

    @property
    def failed(self) -> int:
        return sum(counts.failed for counts in self.suites.values())

    def counts(self, suite: int | None) -> SuiteCounts:
        return self.suites.setdefault(suite, SuiteCounts())

    def to_json(self) -> dict[str, Any]:
        return {
            "file": str(self.file),
            "type": self.vector_type,
            "skip_reason": self.skip_reason,
            "suites": [
                {"suite": suite, **attrs.asdict(counts)}
                for suite, counts in sorted(self.suites.items(), key=lambda item: item[0] or 0)
            ],
            "failures": [attrs.asdict(failure) for failure in self.failures],
        }
