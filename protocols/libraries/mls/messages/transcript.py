"""Transcript hash inputs (RFC 9420 §8.2)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Opaque
from .crypto import MAC
from .framing import FramedContent
from .registries import WireFormat


@frozen
class ConfirmedTranscriptHashInput:
    """The part of a commit's AuthenticatedContent the confirmed transcript hash covers (RFC 9420 §8.2)."""

    wire_format: WireFormat
    content: FramedContent
    signature: Opaque


@frozen
class InterimTranscriptHashInput:
    """The part the interim transcript hash adds: the commit's confirmation tag (RFC 9420 §8.2)."""

    confirmation_tag: MAC
