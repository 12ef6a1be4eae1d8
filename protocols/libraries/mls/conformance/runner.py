"""Run one vector file: load it, detect its type from its content, check every entry, count by suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from protocols.libraries.mls.conformance.detect import detect
from protocols.libraries.mls.conformance.errors import UnknownVectorFile
from protocols.libraries.mls.conformance.report import KEPT_FAILURES, Failure, Report
from protocols.libraries.mls.crypto.suites import SUITES


def load_entries(path: Path) -> list[dict[str, Any]]:
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UnknownVectorFile(f"{path}: cannot read it as JSON ({exc})") from None
    if not isinstance(entries, list):
        raise UnknownVectorFile(f"{path}: not an MLS vector file (it holds no list of entries)")
    return entries


def check_entry(check: Any, entry: dict[str, Any]) -> list[Failure]:
    """The checker's failures; a checker that raises fails the entry, since a conforming one reproduces it."""
    try:
        failures: list[Failure] = check(entry)
    except Exception as exc:  # any error the production code raises on a valid vector is a conformance failure
        return [Failure("(raised)", f"{type(exc).__name__}: {exc}")]
    return failures


def run_file(path: Path) -> Report:
    entries = load_entries(path)
    vector_type = detect(entries)
    if vector_type is None:
        keys = sorted({key for entry in entries if isinstance(entry, dict) for key in entry})
        raise UnknownVectorFile(f"{path}: not a known MLS vector type (entry keys: {', '.join(keys) or 'none'})")
    report = Report(path, vector_type.name)
    for index, entry in enumerate(entries):
        suite_id = entry.get("cipher_suite")
        counts = report.counts(suite_id)
        if suite_id is not None and suite_id not in SUITES:
            counts.skipped += 1
            report.skip_reason = f"cipher suite {suite_id} is not one of RFC 9420's (1 to 7)"
            continue
        failures = check_entry(vector_type.check, entry)
        if failures:
            counts.failed += 1
            room = KEPT_FAILURES - len(report.failures)
            report.failures += [Failure(f.field, f.detail, index) for f in failures[: max(room, 0)]]
        else:
            counts.passed += 1
    return report
