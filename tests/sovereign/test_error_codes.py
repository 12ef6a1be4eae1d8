"""The wire error codes of ``tessera serve`` have one home: protocols/libraries/delivery/codes.py.

The documented table pins the wire text (the one place a test spells a code);
the server sends only members, the store's refusals name one member each, a
client reads every member back as that member, and no module of the server
or its clients keeps a copy of a code's text.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from protocols.libraries.delivery import frames
from protocols.libraries.delivery.client import server_error
from protocols.libraries.delivery.codes import ErrorCode, read_code
from protocols.sovereign import errors

ROOT = Path(__file__).resolve().parents[2]
CODES_MODULE = ROOT / "protocols/libraries/delivery/codes.py"
#: The server and its clients: where a copy of a code's text would be a second home.
SPEAKERS = ("protocols/libraries/delivery", "protocols/sovereign", "protocols/xmtp")


def _documented_codes() -> list[str]:
    text = (ROOT / "docs/server-protocol.md").read_text()
    errors_section = text.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", errors_section, re.MULTILINE)


def test_the_documented_table_and_the_enum_name_the_same_codes() -> None:
    documented = _documented_codes()
    assert len(documented) == len(set(documented)), "docs/server-protocol.md lists a code twice"
    assert documented == [code.value for code in ErrorCode], (
        "docs/server-protocol.md's Errors table and ErrorCode (protocols/libraries/delivery/codes.py) must list "
        "the same codes in the same order: add, rename or move the code in both"
    )


def _store_refusals() -> list[type[errors.SovereignError]]:
    found, todo = [], [errors.SovereignError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_store_refusal_sends_one_member_of_the_enum() -> None:
    raised = [cls for cls in _store_refusals() if cls is not errors.LimitExceeded]  # never raised itself
    for cls in raised:
        assert isinstance(cls.code, ErrorCode), f"{cls.__name__}.code must be an ErrorCode member"
    codes = [cls.code for cls in raised]
    assert len(codes) == len(set(codes)), "two store refusals share a code: a client could not tell them apart"


@pytest.mark.parametrize("code", list(ErrorCode))
def test_a_client_reads_every_code_back_as_its_member(code: ErrorCode) -> None:
    on_the_wire = frames.encode(frames.error_frame(code, "why", 7, limit="max_payload_bytes"))
    refusal = server_error(json.loads(on_the_wire))
    assert refusal.code is code
    assert (refusal.message, refusal.details) == ("why", {"limit": "max_payload_bytes"})


def test_a_code_the_client_does_not_know_stays_its_text() -> None:
    assert read_code("a_newer_servers_code") == "a_newer_servers_code"
    assert not isinstance(read_code("a_newer_servers_code"), ErrorCode)


def _literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_no_module_of_the_server_or_its_clients_spells_a_code() -> None:
    codes = {code.value for code in ErrorCode}
    copies = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for folder in SPEAKERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != CODES_MODULE
        for line, text in _literals(path)
        if text in codes
    ]
    assert not copies, (
        "wire error codes spelled outside protocols/libraries/delivery/codes.py (use the ErrorCode member):\n"
        + "\n".join(copies)
    )
