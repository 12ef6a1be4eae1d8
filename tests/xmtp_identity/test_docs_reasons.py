"""docs/xmtp-identity.md lists every refusal reason the library gives, under the status it is given with."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "protocols" / "libraries" / "xmtp_identity"
DOC = ROOT / "docs" / "xmtp-identity.md"
DEFAULT_STATUS = "INVALID_ARGUMENT"


def _keyword(call: ast.Call, name: str) -> str | None:
    for keyword in call.keywords:
        if keyword.arg == name and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    return None


def reasons_in_code() -> set[tuple[str, str]]:
    found = set()
    for path in LIBRARY.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Refused":
                reason = _keyword(node, "reason")
                if reason is not None:  # re-raised refusals pass reason and status on from another
                    found.add((reason, _keyword(node, "status") or DEFAULT_STATUS))
    return found


def reasons_in_doc() -> set[tuple[str, str]]:
    section = DOC.read_text().split("## Refusals", 1)[1].split("\n## ", 1)[0]
    found: set[tuple[str, str]] = set()
    for status, reasons in re.findall(r"^\| `([A-Z_]+)` \| (.+) \|$", section, re.MULTILINE):
        found.update((reason, status) for reason in re.findall(r"`([a-z_]+)`", reasons))
    return found


def test_every_refusal_reason_is_documented_with_its_status() -> None:
    code = reasons_in_code()
    assert len(code) > 20
    assert code == reasons_in_doc()
