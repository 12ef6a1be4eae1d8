"""Proposals (RFC 9420 §12.1)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Opaque, Uint32, case, tag_of, unknown_case, variant
from .extensions import Extension
from .key_package import KeyPackage
from .nodes import LeafNode
from .psk import PreSharedKeyID
from .registries import SELF_REMOVE_PROPOSAL_TYPE, AnyCipherSuite, AnyProposalType, ProposalType, ProtocolVersion


@variant(ProposalType)
class Proposal:
    """``struct { ProposalType proposal_type; select (...) {...} } Proposal`` (RFC 9420 §12.1).

    Cases: :class:`Add`, :class:`Update`, :class:`Remove`,
    :class:`PreSharedKey`, :class:`ReInit`, :class:`ExternalInit`,
    :class:`GroupContextExtensions`, the MLS extensions draft's
    :class:`SelfRemove`, and :class:`UnknownProposal` for any other type.  ``encode(add)`` is the bare Add; ``encode(add, Proposal)``
    includes the type.
    """

    __slots__ = ()

    @property
    def proposal_type(self) -> int:
        return tag_of(self)


@case(ProposalType.ADD)
@frozen
class Add(Proposal):
    """Add the client of ``key_package`` to the group (RFC 9420 §12.1.1)."""

    key_package: KeyPackage


@case(ProposalType.UPDATE)
@frozen
class Update(Proposal):
    """Replace the sender's leaf with ``leaf_node`` (RFC 9420 §12.1.2)."""

    leaf_node: LeafNode


@case(ProposalType.REMOVE)
@frozen
class Remove(Proposal):
    """Remove the member at leaf index ``removed`` (RFC 9420 §12.1.3)."""

    removed: Uint32


@case(ProposalType.PSK)
@frozen
class PreSharedKey(Proposal):
    """Inject the pre-shared key ``psk`` into the next epoch (RFC 9420 §12.1.4)."""

    psk: PreSharedKeyID


@case(ProposalType.REINIT)
@frozen
class ReInit(Proposal):
    """Close the group and restart it with these parameters (RFC 9420 §12.1.5)."""

    group_id: Opaque
    version: ProtocolVersion
    cipher_suite: AnyCipherSuite
    extensions: tuple[Extension, ...]


@case(ProposalType.EXTERNAL_INIT)
@frozen
class ExternalInit(Proposal):
    """The KEM output an external joiner's commit derives its init secret from (RFC 9420 §12.1.6)."""

    kem_output: Opaque


@case(ProposalType.GROUP_CONTEXT_EXTENSIONS)
@frozen
class GroupContextExtensions(Proposal):
    """Replace the group context's extensions (RFC 9420 §12.1.7)."""

    extensions: tuple[Extension, ...]


@case(SELF_REMOVE_PROPOSAL_TYPE)
@frozen
class SelfRemove(Proposal):
    """Remove the proposal's own sender: ``struct {} SelfRemove`` (draft-ietf-mls-extensions, "SelfRemove Proposal").

    A proposal type added to the registry of RFC 9420 §17.4 by the MLS
    extensions draft.  Its body is empty: the leaf it removes is the
    sender's, taken from the framing of the message that carried it, so a
    commit holds it by reference only.
    """


@unknown_case
@frozen
class UnknownProposal(Proposal):
    """A proposal type RFC 9420 does not define (RFC 9420 §13.2), kept as ``opaque data<V>``.

    RFC 9420 gives no layout for proposal types added later; like mls-rs
    (``CustomProposal``) and OpenMLS, the body is read as one ``opaque<V>``,
    so such proposals decode and re-encode unchanged.  Whether one is
    acceptable is for the group logic to decide (RFC 9420 §12.2).
    """

    proposal_type: AnyProposalType
    data: Opaque
