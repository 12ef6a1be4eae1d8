"""The real ``tessera`` CLI, in this process (click's runner), on encrypted databases of the node profile: what the
CLI tests against a real ``tessera serve --xmtp-port`` process run each step through."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import Result

from tests.helpers import clean_environment, invoke, one_line_error


def tessera(db: Path, *args: str) -> Result:
    """``tessera --db db args``, in a clean environment."""
    return invoke("--db", str(db), *args, env=clean_environment())


def done(db: Path, *args: str) -> Any:
    """``tessera xmtp args --json``, which must succeed; its JSON answer."""
    ran = tessera(db, "xmtp", *args, "--json")
    assert ran.exit_code == 0, (ran.stdout, ran.stderr)
    return json.loads(ran.stdout)


def refused(db: Path, *args: str) -> str:
    """``tessera xmtp args``, which must be refused with exit 1; its one line."""
    ran = tessera(db, "xmtp", *args)
    assert ran.exit_code == 1, (ran.exit_code, ran.stdout, ran.stderr)
    return one_line_error(ran)


def member(db: Path, url: str) -> dict[str, Any]:
    """A new database ``db`` with an XMTP identity registered at the node ``url``; its ``identity new`` answer."""
    assert tessera(db, "init", "--protocol", "xmtp").exit_code == 0
    made: dict[str, Any] = done(db, "identity", "new", "--node", url)
    return made
