"""Logging set-up: readable text, or one JSON object per line for log shippers."""

from __future__ import annotations

import json
import logging

from jobs.hints import pasteable

_STANDARD = set(vars(logging.makeLogRecord({})))


class JsonFormatter(logging.Formatter):
    """Every record as one JSON object; ``extra=`` fields become keys."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"ts": record.created, "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class PasteableHints(logging.Filter):
    """Commands a log line names in backticks get this run's ``--db`` (see :mod:`jobs.hints`): pasted, they work."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "`tessera" in message:
            record.msg, record.args = pasteable(message), None
        return True


def configure_logging(level: str = "WARNING", fmt: str = "text") -> None:
    handler = logging.StreamHandler()
    handler.addFilter(PasteableHints())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("tessera")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
