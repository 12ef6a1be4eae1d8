"""transcript-hashes.json: confirmed and interim transcript hashes and the confirmation tag (section 8.2)."""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.messages import AuthenticatedContent
from protocols.libraries.mls.schedule import confirmation_tag, confirmed_transcript_hash, interim_transcript_hash

KEYS = frozenset(
    {
        "cipher_suite",
        "confirmation_key",
        "authenticated_content",
        "interim_transcript_hash_before",
        "confirmed_transcript_hash_after",
        "interim_transcript_hash_after",
    }
)


def check(entry: dict[str, Any]) -> list[Failure]:
    cs = suite(entry["cipher_suite"])
    commit = decode(AuthenticatedContent, h(entry["authenticated_content"]))
    tag = commit.auth.confirmation_tag
    if tag is None:
        return [Failure("authenticated_content", "the commit carries no confirmation tag")]
    confirmed = confirmed_transcript_hash(cs, h(entry["interim_transcript_hash_before"]), commit)
    failures = compare("confirmed_transcript_hash_after", confirmed, h(entry["confirmed_transcript_hash_after"]))
    failures += compare(
        "authenticated_content.confirmation_tag", tag, confirmation_tag(cs, h(entry["confirmation_key"]), confirmed)
    )
    interim = interim_transcript_hash(cs, h(entry["confirmed_transcript_hash_after"]), tag)
    return failures + compare("interim_transcript_hash_after", interim, h(entry["interim_transcript_hash_after"]))
