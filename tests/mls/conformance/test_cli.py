"""``tessera mls conformance``: every vendored vector file passes, a corrupted one fails where it was corrupted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import VECTORS, invoke, one_line_error

VECTOR_FILES = sorted((VECTORS / "mls").glob("*.json")) + sorted((VECTORS / "mls" / "all-suites").glob("*.json"))


@pytest.fixture(scope="module")
def reports() -> dict[str, dict[str, Any]]:
    """The JSON report of every vendored file, by path relative to tests/vectors/mls (one run for the module)."""
    outcome = invoke("mls", "conformance", "--json", *map(str, VECTOR_FILES))
    assert outcome.exit_code == 0, outcome.output
    return {str(Path(report["file"]).relative_to(VECTORS / "mls")): report for report in json.loads(outcome.output)}


def _totals(report: dict[str, Any]) -> tuple[int, int, int]:
    """(passed, failed, skipped) over every suite of the report."""
    suites = report["suites"]
    return (
        sum(suite["passed"] for suite in suites),
        sum(suite["failed"] for suite in suites),
        sum(suite["skipped"] for suite in suites),
    )


def test_every_vendored_file_is_recognised_and_nothing_fails(reports: dict[str, dict[str, Any]]) -> None:
    assert len(reports) == len(VECTOR_FILES) == 21
    for name, report in reports.items():
        passed, failed, skipped = _totals(report)
        assert failed == 0 and not report["failures"], name
        assert passed > 0 and skipped == 0, name


@pytest.mark.parametrize(
    ("name", "vector_type", "suites", "passed_per_suite"),
    [
        ("tree-math.json", "tree-math", [None], 10),
        ("deserialization.json", "deserialization", [None], 14),
        ("messages.json", "messages", [None], 300),
        ("all-suites/psk_secret.json", "psk_secret", list(range(1, 8)), 11),
        ("all-suites/tree-validation.json", "tree-validation", list(range(1, 8)), 14),
        ("all-suites/treekem.json", "treekem", list(range(1, 8)), 11),
        ("all-suites/message-protection.json", "message-protection", list(range(1, 8)), 1),
        ("tree-operations.json", "tree-operations", [1], 5),
        ("welcome.json", "welcome", [1], 1),
        ("all-suites/welcome.json", "welcome", list(range(1, 8)), 1),
    ],
)
def test_expected_counts(
    reports: dict[str, dict[str, Any]], name: str, vector_type: str, suites: list[int | None], passed_per_suite: int
) -> None:
    report = reports[name]
    assert report["type"] == vector_type
    assert [suite["suite"] for suite in report["suites"]] == suites
    assert all(suite["passed"] == passed_per_suite for suite in report["suites"])


def test_the_type_comes_from_the_content_not_the_name(tmp_path: Path) -> None:
    renamed = tmp_path / "vectors.json"
    renamed.write_text((VECTORS / "mls" / "all-suites" / "psk_secret.json").read_text())
    outcome = invoke("mls", "conformance", str(renamed))
    assert outcome.exit_code == 0, outcome.output
    assert "psk_secret" in outcome.output


def test_a_corrupted_expected_value_fails_with_its_entry_and_field(tmp_path: Path) -> None:
    entries = json.loads((VECTORS / "mls" / "all-suites" / "key-schedule.json").read_text())
    secret = entries[3]["epochs"][2]["sender_data_secret"]
    entries[3]["epochs"][2]["sender_data_secret"] = f"{int(secret[0], 16) ^ 1:x}{secret[1:]}"
    corrupted = tmp_path / "key-schedule.json"
    corrupted.write_text(json.dumps(entries))

    outcome = invoke("mls", "conformance", str(corrupted))
    assert outcome.exit_code == 1
    failure_lines = [line for line in outcome.output.splitlines() if "FAILED" in line]
    flipped = entries[3]["epochs"][2]["sender_data_secret"]
    expected_line = f"{corrupted}: entry 3 FAILED epochs[2].sender_data_secret: got {secret}, expected {flipped}"
    assert failure_lines == [expected_line]

    (report,) = json.loads(invoke("mls", "conformance", "--json", str(corrupted)).output)
    assert [(f["entry"], f["field"]) for f in report["failures"]] == [(3, "epochs[2].sender_data_secret")]
    counts = {suite["suite"]: (suite["passed"], suite["failed"]) for suite in report["suites"]}
    assert counts == {s: (0, 1) if s == entries[3]["cipher_suite"] else (1, 0) for s in range(1, 8)}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('[{"colour": "blue"}]', "not a known MLS vector type (entry keys: colour)"),
        ("[]", "not a known MLS vector type (entry keys: none)"),
        ('{"cipher_suite": 1}', "not an MLS vector file (it holds no list of entries)"),
    ],
)
def test_a_file_of_unknown_shape_is_refused_in_one_line(tmp_path: Path, content: str, problem: str) -> None:
    unknown = tmp_path / "unknown.json"
    unknown.write_text(content)
    assert one_line_error(invoke("mls", "conformance", str(unknown))) == f"Error: {unknown}: {problem}"


@pytest.mark.parametrize("optional", [(), ("ratchet_tree",), ("ratchet_tree", "external_psks")])
def test_a_passive_client_file_is_recognised_with_or_without_its_optional_keys(
    tmp_path: Path, optional: tuple[str, ...]
) -> None:
    """passive-client-random has the shape of the other two; an entry that is not a real group fails, never passes."""
    keys = ["cipher_suite", "key_package", "signature_priv", "encryption_priv", "init_priv", "welcome"]
    keys += ["initial_epoch_authenticator", "epochs", *optional]
    passive = tmp_path / "passive-client-random.json"
    passive.write_text(json.dumps([dict.fromkeys(keys, "00") | {"cipher_suite": 2, "epochs": []}]))
    result = invoke("mls", "conformance", "--json", str(passive))
    (report,) = json.loads(result.output)
    assert report["type"] == "passive-client"
    assert report["suites"] == [{"suite": 2, "passed": 0, "failed": 1, "skipped": 0}]
    assert result.exit_code == 1


def test_an_entry_for_a_cipher_suite_outside_rfc_9420_is_skipped_with_the_reason(tmp_path: Path) -> None:
    entries = json.loads((VECTORS / "mls" / "all-suites" / "welcome.json").read_text())[:1]
    entries.append(entries[0] | {"cipher_suite": 0x0A0A})
    path = tmp_path / "welcome.json"
    path.write_text(json.dumps(entries))
    (report,) = json.loads(invoke("mls", "conformance", "--json", str(path)).output)
    assert report["suites"] == [
        {"suite": 1, "passed": 1, "failed": 0, "skipped": 0},
        {"suite": 0x0A0A, "passed": 0, "failed": 0, "skipped": 1},
    ]
    assert report["skip_reason"] == "cipher suite 2570 is not one of RFC 9420's (1 to 7)"
