"""Commits (RFC 9420 §12.4)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Uint8Enum, case, tag_of, variant
from .crypto import ProposalRef
from .proposals import Proposal
from .update_path import UpdatePath


class ProposalOrRefType(Uint8Enum):
    """``enum { reserved(0), proposal(1), reference(2), (255) } ProposalOrRefType`` (RFC 9420 §12.4)."""

    PROPOSAL = 1
    REFERENCE = 2


@variant(ProposalOrRefType)
class ProposalOrRef:
    """``struct { ProposalOrRefType type; select (...) {...} } ProposalOrRef`` (RFC 9420 §12.4).

    Cases: :class:`ProposalByValue` and :class:`ProposalByReference`.
    """

    __slots__ = ()

    @property
    def type(self) -> ProposalOrRefType:
        return ProposalOrRefType(tag_of(self))


@case(ProposalOrRefType.PROPOSAL)
@frozen
class ProposalByValue(ProposalOrRef):
    """``case proposal: Proposal proposal`` (RFC 9420 §12.4)."""

    proposal: Proposal


@case(ProposalOrRefType.REFERENCE)
@frozen
class ProposalByReference(ProposalOrRef):
    """``case reference: ProposalRef reference`` (RFC 9420 §12.4)."""

    reference: ProposalRef


@frozen
class Commit:
    """The proposals a commit applies, and the committer's update path if any (RFC 9420 §12.4)."""

    proposals: tuple[ProposalOrRef, ...]
    path: UpdatePath | None
