"""Values RFC 9420 lets newer or GREASE-ing peers send must survive a decode/encode round trip."""

from __future__ import annotations

import attrs
import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import EncodeError, decode, encode

from ._samples import key_package

KEY_PACKAGE = key_package()
PRIVATE_USE = 0xF001
GREASE = sorted(m.GREASE_VALUES)


def test_grease_values_are_the_rfc_list():
    assert GREASE[:2] == [0x0A0A, 0x1A1A]
    assert GREASE[-1] == 0xEAEA
    assert len(GREASE) == 15


def greased_key_package() -> m.KeyPackage:
    leaf = KEY_PACKAGE.leaf_node
    capabilities = m.Capabilities(
        versions=(m.ProtocolVersion.MLS10, 0x0A0A),
        cipher_suites=(*leaf.capabilities.cipher_suites, 0x1A1A),
        extensions=(m.ExtensionType.APPLICATION_ID, 0x2A2A, PRIVATE_USE),
        proposals=(*leaf.capabilities.proposals, 0x3A3A, PRIVATE_USE),
        credentials=(m.CredentialType.BASIC, 0x4A4A),
    )
    leaf = attrs.evolve(leaf, capabilities=capabilities, extensions=(m.Extension(0x2A2A, b"anything"),))
    return attrs.evolve(KEY_PACKAGE, leaf_node=leaf, extensions=(m.Extension(0x5A5A, bytes(range(40))),))


def test_grease_in_capabilities_and_extensions_round_trips():
    greased = greased_key_package()
    data = encode(m.MLSMessage(m.ProtocolVersion.MLS10, greased))
    decoded = decode(m.MLSMessage, data).message
    assert isinstance(decoded, m.KeyPackage)
    assert decoded == greased
    capabilities = decoded.leaf_node.capabilities
    assert capabilities.versions == (m.ProtocolVersion.MLS10, 0x0A0A)
    # Known code points come back as enum members, unknown ones as plain ints.
    assert type(capabilities.extensions[0]) is m.ExtensionType
    assert type(capabilities.extensions[1]) is int
    assert decoded.extensions[0].extension_type == 0x5A5A


def test_unknown_proposal_type_is_carried_opaque():
    proposal = m.UnknownProposal(PRIVATE_USE, b"\x01\x02\x03")
    data = encode(proposal, m.Proposal)
    assert data == bytes.fromhex("f001 03 010203")
    assert decode(m.Proposal, data) == proposal
    assert proposal.proposal_type == PRIVATE_USE
    commit = m.Commit((m.ProposalByValue(proposal), m.ProposalByValue(m.Remove(3))), None)
    assert decode(m.Commit, encode(commit)) == commit


def test_known_proposal_types_decode_to_their_case():
    proposal = decode(m.Proposal, encode(m.Remove(7), m.Proposal))
    assert proposal == m.Remove(7)
    assert proposal.proposal_type == m.ProposalType.REMOVE


@pytest.mark.parametrize("tag, reason", [(m.ProposalType.ADD, "the tag of Add"), (0, "reserved")])
def test_unknown_proposal_cannot_take_a_known_or_reserved_tag(tag, reason):
    with pytest.raises(EncodeError, match=reason):
        encode(m.UnknownProposal(tag, b""), m.Proposal)


def test_unknown_credential_type_is_carried_opaque():
    credential = m.UnknownCredential(PRIVATE_USE, b"custom")
    leaf = attrs.evolve(KEY_PACKAGE.leaf_node, credential=credential)
    decoded = decode(m.LeafNode, encode(leaf))
    assert decoded.credential == credential
    assert decoded.credential.credential_type == PRIVATE_USE


def test_x509_credential_round_trips():
    credential = m.X509Credential((m.Certificate(b"leaf-der"), m.Certificate(b"ca-der")))
    data = encode(credential, m.Credential)
    assert data[:2] == b"\x00\x02"
    assert decode(m.Credential, data) == credential
