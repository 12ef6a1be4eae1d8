"""``tessera parked list``: filtered by protocol and reason, and one item shown with its payload (``--show``)."""

from __future__ import annotations

import json

import pytest

from core import drain
from protocols import example, marmot
from protocols.example import simulate
from protocols.marmot.wire import nostr
from tests.disk_secrets import key_texts, leaks
from tests.helpers import invoke, one_line_error, push

SHAPELESS_EVENT = json.dumps({"id": "0" * 64, "kind": nostr.GROUP_EVENT_KIND, "content": "x", "tags": "x"}).encode()
ENCRYPTED_CONTENT = "sealed-" + "ab" * 40


def forged_post() -> tuple[bytes, dict]:
    """A post whose body was changed after it was signed: readable, but its id no longer matches."""
    message = json.loads(simulate.generate(1, seed=3)[0])
    message["body"] = "changed after signing"
    return json.dumps(message).encode(), message


def wrong_signature_event() -> tuple[bytes, dict]:
    """A well-shaped kind-445 event whose id and signature are made up."""
    event = {
        "id": "1" * 64,
        "pubkey": "2" * 64,
        "created_at": 1_700_000_000,
        "kind": nostr.GROUP_EVENT_KIND,
        "tags": [["h", "3" * 64]],
        "content": ENCRYPTED_CONTENT,
        "sig": "4" * 128,
    }
    return json.dumps(event).encode(), event


@pytest.fixture
def parked(make_app):
    """An app with four parked items: example garbage, a forged example post, two broken Marmot events."""
    app = make_app([example, marmot], ["example", "marmot"])
    forged, _ = forged_post()
    wrong, _ = wrong_signature_event()
    push(app, b"not json at all", forged, protocol="example")
    push(app, SHAPELESS_EVENT, wrong, protocol="marmot")
    drain.run_until_idle(app.runtime, advance_clock=True)
    rows = json.loads(invoke("--db", app.db.path, "parked", "list", "--json").stdout)
    assert [row["protocol"] for row in rows] == ["example", "example", "marmot", "marmot"]
    return app, {(row["protocol"], index): row for index, row in enumerate(rows)}


def listed(app, *args: str) -> list[dict]:
    return json.loads(invoke("--db", app.db.path, "parked", "list", "--json", *args).stdout)


def test_filters_by_protocol_by_reason_and_by_both(parked):
    app, rows = parked
    assert [row["protocol"] for row in listed(app, "--protocol", "marmot")] == ["marmot", "marmot"]
    forged = rows[("example", 1)]
    reason_words = forged["reason"].split(":")[-1].strip().upper()  # any case matches
    assert [row["id"] for row in listed(app, "--reason", reason_words)] == [forged["id"]]
    assert listed(app, "--protocol", "marmot", "--reason", reason_words) == []
    assert listed(app, "--protocol", "xmtp") == []
    text = invoke("--db", app.db.path, "parked", "list", "--protocol", "example").output
    assert text.strip().endswith("2 parked items")


def test_show_decodes_what_the_plugin_can_describe_and_shows_the_rest_in_hex(parked):
    app, rows = parked
    _, forged = forged_post()
    shown = json.loads(
        invoke("--db", app.db.path, "parked", "list", "--show", str(rows[("example", 1)]["id"]), "--json").output
    )
    assert shown["payload"] == forged and "payload_hex" not in shown and "blob" not in shown
    assert shown["reason"] == rows[("example", 1)]["reason"]

    garbage = json.loads(
        invoke("--db", app.db.path, "parked", "list", "--show", str(rows[("example", 0)]["id"]), "--json").output
    )
    assert garbage["payload_hex"] == b"not json at all".hex() and "payload" not in garbage

    _, event = wrong_signature_event()
    text = invoke("--db", app.db.path, "parked", "list", "--show", str(rows[("marmot", 3)]["id"])).output
    assert (
        f"parked item {rows[('marmot', 3)]['id']}: marmot/incoming" in text and "decoded by the marmot plugin" in text
    )
    assert event["pubkey"] in text and f'"content_chars": {len(ENCRYPTED_CONTENT)}' in text
    assert ENCRYPTED_CONTENT not in text  # the sealed content is never printed
    assert leaks([text], key_texts(app.db.secret)) == []


def test_show_of_an_id_that_is_not_parked_is_one_line(parked):
    app, _ = parked
    assert "no parked item 999" in one_line_error(invoke("--db", app.db.path, "parked", "list", "--show", "999"))


def test_pages_newest_first_oldest_first_within_and_before_an_id(parked):
    """The paging of docs/cli.md: --limit N shows the N newest items, oldest first; --before ID the ones older."""
    app, _ = parked
    ids = [row["id"] for row in listed(app)]
    assert ids == sorted(ids)
    assert [row["id"] for row in listed(app, "--limit", "3")] == ids[-3:]
    assert [row["id"] for row in listed(app, "--limit", "3", "--before", str(ids[-3]))] == ids[:1]
    assert [row["id"] for row in listed(app, "--protocol", "marmot", "--before", str(ids[-1]))] == ids[2:3]
    text = invoke("--db", app.db.path, "parked", "list", "--limit", "3").output
    older = f"`tessera --db {app.db.path} parked list --before {ids[-3]} --limit 3`"
    assert text.rstrip().endswith(f"3 parked items\nolder: {older}")
    filtered = invoke("--db", app.db.path, "parked", "list", "--protocol", "marmot", "--limit", "1").output
    assert filtered.rstrip().endswith(f"--protocol marmot --before {ids[-1]} --limit 1`")
    assert invoke("--db", app.db.path, "parked", "list").output.rstrip().endswith("4 parked items")
