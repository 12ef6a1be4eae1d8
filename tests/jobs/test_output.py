"""The CLI never prints raw bytes: hex in text output, base64 in --json."""

from __future__ import annotations

import base64
import json

from click.testing import CliRunner

from core.drain import run_until_idle
from jobs import output
from jobs.cli import cli
from protocols import example
from tests.helpers import push

RAW = b"\x00\xff\x1b[31m"  # a NUL, a non-UTF-8 byte and a terminal escape


def test_bytes_are_hex_in_text_and_base64_in_json():
    assert output.text(RAW) == "00ff1b5b33316d"
    assert output.text(memoryview(RAW)) == "00ff1b5b33316d"
    assert output.text(7) == "7"
    assert json.loads(output.to_json({"blob": RAW, "n": 1})) == {"blob": base64.b64encode(RAW).decode(), "n": 1}


def test_a_parked_item_whose_partition_key_a_plugin_stored_as_bytes_lists_as_base64(make_app):
    app = make_app([example], ["example"])
    push(app, b"not an example message", protocol="example")
    assert run_until_idle(app.runtime).outcomes == {"parked": 1}
    with app.db.write():  # SQLite keeps whatever type a (non-STRICT) column is given
        app.db.execute("UPDATE parked SET partition_key = ?", (RAW,))
    listed = CliRunner().invoke(cli, ["--db", app.db.path, "parked", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout)[0]["partition_key"] == base64.b64encode(RAW).decode()
