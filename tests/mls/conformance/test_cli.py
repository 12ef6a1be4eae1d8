"""``tessera mls conformance``: every shipped vector file passes from an installed package, a corrupted one fails where it was corrupted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from protocols.libraries.mls.conformance.shipped import vector_file, vector_files
from tests.helpers import ROOT, invoke, one_line_error

SHIPPED = [path.name for path in vector_files()]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The JSON report of ``tessera mls conformance`` with no files, by file name (one run for the module).

    It runs from a plain (non-editable) install of this checkout, in a directory outside it, so the
    vectors it finds are the package data an installed package carries, not the checkout's files.
    """
    site, elsewhere = tmp_path_factory.mktemp("site"), tmp_path_factory.mktemp("elsewhere")
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    source = tmp_path_factory.mktemp("source")
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run([*install, "--target", str(site), str(source)], check=True, capture_output=True, timeout=300)
    env = {name: value for name, value in os.environ.items() if not name.startswith("TESSERA_")}
    env["PYTHONPATH"] = str(site)  # the installed copy, ahead of anything the interpreter would find
    run = "import sys; from jobs.cli import main; sys.argv[0] = 'tessera'; main()"
    outcome = subprocess.run(
        [sys.executable, "-c", run, "mls", "conformance", "--json"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert outcome.returncode == 0, outcome.stderr[-2000:]
    found = {Path(report["file"]): report for report in json.loads(outcome.stdout)}
    assert all(path.is_relative_to(site) for path in found), "the vectors came from the installed package"
    return {path.name: report for path, report in found.items()}


def _totals(report: dict[str, Any]) -> tuple[int, int, int]:
    """(passed, failed, skipped) over every suite of the report."""
    suites = report["suites"]
    return (
        sum(suite["passed"] for suite in suites),
        sum(suite["failed"] for suite in suites),
        sum(suite["skipped"] for suite in suites),
    )


def test_every_vendored_file_is_recognised_and_nothing_fails(reports: dict[str, dict[str, Any]]) -> None:
    assert sorted(reports) == SHIPPED and len(SHIPPED) == 15
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
        ("psk_secret.json", "psk_secret", list(range(1, 8)), 11),
        ("tree-validation.json", "tree-validation", list(range(1, 8)), 14),
        ("treekem.json", "treekem", list(range(1, 8)), 11),
        ("message-protection.json", "message-protection", list(range(1, 8)), 1),
        ("tree-operations.json", "tree-operations", [1], 5),
        ("welcome.json", "welcome", list(range(1, 8)), 1),
        ("passive-client-welcome.json", "passive-client", list(range(1, 8)), 8),
        ("passive-client-handling-commit.json", "passive-client", list(range(1, 8)), 13),
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
    renamed.write_text(vector_file("psk_secret").read_text())
    outcome = invoke("mls", "conformance", str(renamed))
    assert outcome.exit_code == 0, outcome.output
    assert "psk_secret" in outcome.output


def test_a_corrupted_expected_value_fails_with_its_entry_and_field(tmp_path: Path) -> None:
    entries = json.loads(vector_file("key-schedule").read_text())
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

    (report,) = json.loads(invoke("mls", "conformance", "--json", str(corrupted)).stdout)
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
    (report,) = json.loads(result.stdout)
    assert report["type"] == "passive-client"
    assert report["suites"] == [{"suite": 2, "passed": 0, "failed": 1, "skipped": 0}]
    assert result.exit_code == 1


def test_an_entry_for_a_cipher_suite_outside_rfc_9420_is_skipped_with_the_reason(tmp_path: Path) -> None:
    entries = json.loads(vector_file("welcome").read_text())[:1]
    entries.append(entries[0] | {"cipher_suite": 0x0A0A})
    path = tmp_path / "welcome.json"
    path.write_text(json.dumps(entries))
    (report,) = json.loads(invoke("mls", "conformance", "--json", str(path)).stdout)
    assert report["suites"] == [
        {"suite": 1, "passed": 1, "failed": 0, "skipped": 0},
        {"suite": 0x0A0A, "passed": 0, "failed": 0, "skipped": 1},
    ]
    assert report["skip_reason"] == "cipher suite 2570 is not one of RFC 9420's (1 to 7)"


def test_help_does_not_say_welcome_or_passive_client_vectors_are_skipped() -> None:
    shown = " ".join(invoke("mls", "conformance", "--help").output.split())
    assert "welcome and passive-client included" in shown and "counted as skipped" not in shown
    assert "default: the ones shipped with the package" in shown
