"""Marmot's states and failure reasons are spelled once (read/states.py, facts.py): code compares members, SQL binds them.

(The tables' CHECK constraints in schema.sql and the migrations list the same
values: DDL cannot import; test_schema_checks_list_every_state keeps them equal.)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from protocols.marmot.facts import REASONS, RETRYABLE_REASONS, FailureReason
from protocols.marmot.read.history import RACE_REASONS
from protocols.marmot.read.states import MessageState, OuterState, WelcomeState

PLUGIN = Path(__file__).resolve().parents[2] / "protocols" / "marmot"
STATES_MODULE = PLUGIN / "read" / "states.py"
ENUMS = (OuterState, MessageState, WelcomeState)
#: Column -> its enum, as schema.sql declares it.
COLUMNS = {
    ("marmot_processed", "state"): OuterState,
    ("marmot_messages", "state"): MessageState,
    ("marmot_welcomes", "state"): WelcomeState,
}


def _string_literals() -> list[tuple[Path, int, str]]:
    found = []
    for path in sorted(PLUGIN.rglob("*.py")):
        if path == STATES_MODULE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        found += [
            (path, node.lineno, node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        ]
    return found


def test_no_sql_of_the_plugin_spells_a_state():
    quoted = {f"'{member.value}'" for enum in ENUMS for member in enum}
    spelled = [
        f"{path.relative_to(PLUGIN)}:{line}: {literal}"
        for path, line, text in _string_literals()
        for literal in sorted(quoted)
        if literal in text
    ]
    assert spelled == [], "bind the state's enum member as a parameter instead:\n" + "\n".join(spelled)


def test_no_code_of_the_plugin_compares_a_state_by_its_text():
    # The record states are capitalised words no other Marmot vocabulary uses (invitations' share theirs with
    # other words, so the SQL check above is what holds them).
    texts = {member.value for enum in (OuterState, MessageState) for member in enum}
    spelled = [
        f"{path.relative_to(PLUGIN)}:{line}: {text!r}" for path, line, text in _string_literals() if text in texts
    ]
    assert spelled == [], "compare with the OuterState/MessageState member instead:\n" + "\n".join(spelled)


def test_schema_checks_list_every_state():
    schema = (PLUGIN / "schema.sql").read_text()
    for (table, column), enum in COLUMNS.items():
        body = re.search(rf"CREATE TABLE {table} \((.*?)\n\)", schema, re.DOTALL)
        assert body is not None, f"schema.sql has no table {table}"
        check = re.search(rf"\b{column}\b[^,]*?CHECK \({column} IN \(([^)]*)\)\)", body.group(1), re.DOTALL)
        assert check is not None, f"{table}.{column} has no CHECK listing its states"
        listed = re.findall(r"'(\w+)'", check.group(1))
        assert sorted(listed) == sorted(member.value for member in enum), f"{table}.{column} vs {enum.__name__}"


def test_every_failure_reason_is_explained_once():
    assert list(REASONS) == list(FailureReason), "REASONS explains each FailureReason, in the enum's order"
    assert set(RACE_REASONS) <= RETRYABLE_REASONS <= set(FailureReason)
