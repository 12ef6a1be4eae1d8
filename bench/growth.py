"""How the suite's figures grow with the run's size: the JSON of runs at several sizes as one Markdown table.

    python bench/growth.py 100k.json 1m.json 10m.json [--markdown FILE]

Each file is what ``python -m bench --json FILE`` wrote.  A figure is matched across runs by its benchmark
and its name with the sizes taken out (``rebuild of 100,000 events`` and ``rebuild of 10,000,000 events``
are one row), so the table needs no list of figures kept by hand; percentiles such as p50 and p99 stay
apart.  Each cell is our figure and, where the figure has a ceiling, its ratio; runs are ordered by size
and each column is headed by its size and commit.  A figure that only some runs measured shows an empty
cell in the others.  Runs that recorded the machine's pace (``python -c pass`` as each benchmark began) get a
first row with its median and range, so columns measured on a slower or faster day can be told apart.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from suite import number_text, ratio_text

#: Sizes in a figure's name: a number with a thousands comma or a decimal point, or of three digits or more,
#: and the count of a median (``median of 5`` in a small run, ``of 21`` in a large one).  ``p50``, ``p99``,
#: ``2 workers``, ``5 round(s)`` and ``kind-445`` are kept: they name the figure, not the run's size.
_SIZE = re.compile(
    r"(?<![\w.-])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w.])|(?<![\w.-])\d+\.\d+(?![\w.])|(?<![\w.-])\d{3,}(?![\w.])"
    r"|(?<=median of )\d+(?![\w.])"
)


class NotARun(Exception):
    """A file that is not the JSON of a run of the suite."""


def sizeless(name: str) -> str:
    """A figure's name with the run's sizes replaced by N."""
    return _SIZE.sub("N", name)


def load_run(path: str) -> dict[str, Any]:
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise NotARun(f"{path} is not the JSON of a run of python -m bench ({exc})") from exc
    missing = [key for key in ("events", "commit", "figures") if not isinstance(document, dict) or key not in document]
    if missing:
        raise NotARun(f"{path} is not the JSON of a run of python -m bench (no {', '.join(missing)})")
    return dict(document)


def growth_table(runs: list[dict[str, Any]]) -> str:
    """``runs`` (as :func:`load_run` reads them) as one Markdown table, smallest run first."""
    runs = sorted(runs, key=lambda run: run["events"])
    rows: dict[tuple[str, str], dict[int, str]] = {}
    for column, run in enumerate(runs):
        for figure in run["figures"]:
            key = (figure["benchmark"], sizeless(figure["name"]))
            cell = f"{number_text(figure['ours'])} {figure['unit']}"
            if figure.get("ratio") is not None:
                cell += f" ({ratio_text(figure['ratio'])})"
            rows.setdefault(key, {})[column] = cell
    heads = [f"{run['events']:,} events ({run['commit']})" for run in runs]
    lines = [
        "| benchmark | figure (N: the run's sizes) | " + " | ".join(heads) + " |",
        "|---|---|" + "---:|" * len(runs),
    ]
    if any(run.get("pace") for run in runs):  # runs made before the suite recorded it have none
        paces = [_pace_cell(run.get("pace") or {}) for run in runs]
        lines.append(f"| (machine) | `python -c pass` as its benchmarks began, median (range) | {' | '.join(paces)} |")
    for (benchmark, name), cells in rows.items():
        if len(cells) < 2:
            continue  # measured at one size only: nothing grows
        values = " | ".join(cells.get(column, "") for column in range(len(runs)))
        lines.append(f"| {benchmark} | {name.replace('|', chr(92) + '|')} | {values} |")
    return "\n".join(lines) + "\n"


def _pace_cell(pace: dict[str, float]) -> str:
    """A run's pace over its benchmarks: the median and range of ``python -c pass`` as each began."""
    if not pace:
        return ""
    times = sorted(pace.values())
    return f"{number_text(statistics.median(times))} ms ({number_text(times[0])}–{number_text(times[-1])})"


def main(argv: list[str] | None = None) -> int:
    found = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    found.add_argument("runs", nargs="+", metavar="RUN.json", help="the JSON of runs of python -m bench")
    found.add_argument("--markdown", metavar="FILE", help="write the table to FILE (default: print it)")
    args = found.parse_args(argv)
    try:
        table = growth_table([load_run(path) for path in args.runs])
    except NotARun as refused:
        print(f"growth.py: error: {refused}", file=sys.stderr)
        return 2
    if args.markdown:
        Path(args.markdown).write_text(table)
    else:
        print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
