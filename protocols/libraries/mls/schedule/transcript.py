"""Transcript hashes and the confirmation tag (RFC 9420 sections 8.2 and 6.1).

::

    confirmed_transcript_hash[n] = Hash(interim_transcript_hash[n-1] || ConfirmedTranscriptHashInput[n])
    interim_transcript_hash[n]   = Hash(confirmed_transcript_hash[n] || InterimTranscriptHashInput[n])
    confirmation_tag[n]          = MAC(confirmation_key[n], confirmed_transcript_hash[n])

The confirmed hash goes into epoch ``n``'s GroupContext, which the key
schedule needs before the confirmation key, and so the tag, exist: compute
them in that order.  A new group starts from an empty confirmed hash, whose
interim hash takes epoch 0's tag.
"""

from __future__ import annotations

from ..codec import encode
from ..crypto import CipherSuite
from ..errors import ConfirmationMismatch
from ..messages import (
    AuthenticatedContent,
    ConfirmedTranscriptHashInput,
    ContentType,
    InterimTranscriptHashInput,
)
from .errors import NotACommit


def confirmed_input(commit: AuthenticatedContent) -> ConfirmedTranscriptHashInput:
    """The part of a commit's AuthenticatedContent the confirmed transcript hash covers (all but the tag)."""
    return ConfirmedTranscriptHashInput(commit.wire_format, commit.content, commit.auth.signature)


def confirmed_transcript_hash(
    cs: CipherSuite, interim_before: bytes, commit: ConfirmedTranscriptHashInput | AuthenticatedContent
) -> bytes:
    """The confirmed transcript hash after ``commit``; any content but a commit raises :class:`NotACommit`."""
    hash_input = confirmed_input(commit) if isinstance(commit, AuthenticatedContent) else commit
    if hash_input.content.content_type != ContentType.COMMIT:
        raise NotACommit(f"transcript hashes cover commits, not {hash_input.content.content_type.name.lower()}s")
    return cs.hash(interim_before + encode(hash_input))


def interim_transcript_hash(cs: CipherSuite, confirmed: bytes, confirmation_tag: bytes) -> bytes:
    """The interim transcript hash that the next commit's confirmed hash starts from."""
    return cs.hash(confirmed + encode(InterimTranscriptHashInput(confirmation_tag)))


def confirmation_tag(cs: CipherSuite, confirmation_key: bytes, confirmed: bytes) -> bytes:
    """``MAC(confirmation_key, confirmed_transcript_hash)``: what a committer puts in its commit."""
    return cs.mac(confirmation_key, confirmed)


def verify_confirmation_tag(cs: CipherSuite, confirmation_key: bytes, confirmed: bytes, tag: bytes) -> None:
    """Check a received tag in constant time; a wrong one raises :class:`ConfirmationMismatch`.

    A mismatch means the committer's view of the new epoch differs from ours.
    """
    if not cs.verify_mac(confirmation_key, confirmed, tag):
        raise ConfirmationMismatch("the confirmation tag does not match this member's view of the new epoch")
