"""``tessera mls conformance [FILE...]``: run official RFC 9420 vector files against the MLS library.

The checkers (every RFC 9420 package) are imported only when the command runs,
so registering the group costs the command line's start-up nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from jobs import output
from jobs.cli_options import json_option

if TYPE_CHECKING:
    from protocols.libraries.mls.conformance.report import Report


@click.group()
def mls() -> None:
    """The RFC 9420 MLS library (registered by the Marmot plugin, which ships it)."""


@mls.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))
@json_option
def conformance(files: tuple[Path, ...], as_json: bool) -> None:
    """Check official mlswg vector FILES (default: the ones shipped with the package, every type and suite).

    The type of each file is told from its entries' keys, not its name.
    Prints passed / failed / skipped entries per file and cipher suite and
    exits 1 when any entry failed.  Every type runs, welcome and
    passive-client included; an entry is skipped only when its cipher suite
    is not one of RFC 9420's (1 to 7).
    """
    from protocols.libraries.mls.conformance.runner import run_file
    from protocols.libraries.mls.conformance.shipped import vector_files

    files = files or tuple(vector_files())
    reports = [run_file(path) for path in files]
    if as_json:
        click.echo(output.to_json([report.to_json() for report in reports]))
    else:
        _print_table(reports)
    if any(report.failed for report in reports):
        raise SystemExit(1)


def _print_table(reports: list[Report]) -> None:
    rows = [("file", "type", "suite", "passed", "failed", "skipped")]
    for report in reports:
        for suite, counts in sorted(report.suites.items(), key=lambda item: item[0] or 0):
            shown = "-" if suite is None else str(suite)
            rows.append(
                (
                    str(report.file),
                    report.vector_type,
                    shown,
                    str(counts.passed),
                    str(counts.failed),
                    str(counts.skipped),
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    for report in reports:
        if report.skip_reason:
            click.echo(f"{report.file}: skipped, {report.skip_reason}")
        for failure in report.failures:
            click.echo(f"{report.file}: entry {failure.entry} FAILED {failure.field}: {failure.detail}")
