"""RFC 9420 transcript-hashes.json: all seven suites, plus the refusals around it."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.conformance.checkers.transcript_hashes import check
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.errors import ConfirmationMismatch
from protocols.libraries.mls.messages import ApplicationData, AuthenticatedContent, ContentType
from protocols.libraries.mls.schedule import (
    NotACommit,
    confirmed_input,
    confirmed_transcript_hash,
    verify_confirmation_tag,
)
from tests.mls.crypto._vectors import h, mls

VECTORS = mls("transcript-hashes")
CASES = pytest.mark.parametrize("vector", VECTORS, ids=[f"suite-{v['cipher_suite']}" for v in VECTORS])


def _commit(vector: dict[str, Any]) -> tuple[AuthenticatedContent, bytes]:
    commit = decode(AuthenticatedContent, h(vector["authenticated_content"]))
    assert commit.content.content_type == ContentType.COMMIT
    tag = commit.auth.confirmation_tag
    assert tag is not None
    return commit, tag


@CASES
def test_transcript_hashes_and_confirmation_tag(vector: dict[str, Any]) -> None:
    assert check(vector) == []
    _, tag = _commit(vector)
    verify_confirmation_tag(
        suite(vector["cipher_suite"]), h(vector["confirmation_key"]), h(vector["confirmed_transcript_hash_after"]), tag
    )


@CASES
def test_the_confirmed_hash_ignores_the_tag_and_takes_the_input_struct(vector: dict[str, Any]) -> None:
    cs = suite(vector["cipher_suite"])
    commit, _ = _commit(vector)
    before = h(vector["interim_transcript_hash_before"])
    untagged = attrs.evolve(commit, auth=attrs.evolve(commit.auth, confirmation_tag=b"other"))
    assert confirmed_transcript_hash(cs, before, untagged) == h(vector["confirmed_transcript_hash_after"])
    assert confirmed_transcript_hash(cs, before, confirmed_input(commit)) == h(
        vector["confirmed_transcript_hash_after"]
    )


@CASES
def test_a_wrong_tag_key_or_hash_is_refused(vector: dict[str, Any]) -> None:
    cs = suite(vector["cipher_suite"])
    _, tag = _commit(vector)
    key, confirmed = h(vector["confirmation_key"]), h(vector["confirmed_transcript_hash_after"])
    flipped = bytes([tag[0] ^ 1]) + tag[1:]
    for wrong in ((key, confirmed, flipped), (key, confirmed, tag[:-1]), (b"k" + key[1:], confirmed, tag)):
        with pytest.raises(ConfirmationMismatch) as refused:
            verify_confirmation_tag(cs, *wrong)
        assert key.hex() not in str(refused.value) and tag.hex() not in str(refused.value)
    with pytest.raises(ConfirmationMismatch):
        verify_confirmation_tag(cs, key, confirmed[:-1] + b"\x00", tag)


def test_only_commits_enter_the_transcript() -> None:
    cs = suite(1)
    commit, _ = _commit(VECTORS[0])
    application = attrs.evolve(
        commit,
        content=attrs.evolve(commit.content, content=ApplicationData(b"hello")),
        auth=attrs.evolve(commit.auth, confirmation_tag=None),
    )
    with pytest.raises(NotACommit) as refused:
        confirmed_transcript_hash(cs, b"", application)
    assert isinstance(refused.value, ValueError)
    with pytest.raises(NotACommit):
        confirmed_transcript_hash(cs, b"", confirmed_input(application))


def test_the_vectors_cover_every_suite() -> None:
    assert sorted(v["cipher_suite"] for v in VECTORS) == list(range(1, 8))
