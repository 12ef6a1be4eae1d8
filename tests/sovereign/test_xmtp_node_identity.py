"""The XMTP node's identity updates on the store: sequence ids node-wide (as XMTP's nodes give them), the identifier -> inbox lookup (the
latest claim among the inboxes holding an identifier wins; a revocation takes back only its own inbox's), and
an update refused against its inbox's state leaves nothing behind."""

from __future__ import annotations

import pytest

from protocols.libraries.xmtp_identity import Refused
from protocols.libraries.xmtp_wire.proto import associations_pb2, identity_api_pb2
from protocols.sovereign.xmtp_node import reads
from tests.xmtp_identity import forge


def publish(store, update: associations_pb2.IdentityUpdate) -> None:
    params = {"update": update, "raw": update.SerializeToString(deterministic=True)}
    store.app.runtime.run_command("sovereign.xmtp_publish_identity_update", params)


def inbox_of(store, wallet: forge.Wallet) -> str | None:
    asked = identity_api_pb2.GetInboxIdsRequest.Request(
        identifier=wallet.address, identifier_kind=associations_pb2.IDENTIFIER_KIND_ETHEREUM
    )
    [answer] = reads.inbox_ids(store, identity_api_pb2.GetInboxIdsRequest(requests=[asked])).responses
    return answer.inbox_id if answer.HasField("inbox_id") else None


def sequence_ids(store, inbox_id: str) -> list[int]:
    asked = identity_api_pb2.GetIdentityUpdatesRequest.Request(inbox_id=inbox_id, sequence_id=0)
    [answer] = reads.identity_updates(store, identity_api_pb2.GetIdentityUpdatesRequest(requests=[asked])).responses
    return [log.sequence_id for log in answer.updates]


def test_the_latest_claim_wins_and_a_revocation_gives_the_identifier_back(store) -> None:
    wallet, other = forge.Wallet(), forge.Wallet()
    first, second = forge.inbox_of(wallet), forge.inbox_of(other)
    publish(store, forge.signed_update(first, forge.create_inbox(wallet)))
    publish(store, forge.signed_update(second, forge.create_inbox(other)))
    assert inbox_of(store, wallet) == first

    publish(store, forge.signed_update(second, forge.add(wallet.member(), other.sign, wallet.sign)))
    assert inbox_of(store, wallet) == second
    publish(store, forge.signed_update(second, forge.revoke(wallet.member(), other.sign)))
    assert inbox_of(store, wallet) == first  # the first inbox still holds it
    assert sequence_ids(store, first) == [1]  # one sequence for every inbox, as XMTP's nodes number them
    assert sequence_ids(store, second) == [2, 3, 4]


def test_a_refused_update_stores_nothing_and_takes_no_sequence_id(store) -> None:
    wallet, stranger = forge.Wallet(), forge.Wallet()
    inbox = forge.inbox_of(wallet)
    publish(store, forge.signed_update(inbox, forge.create_inbox(wallet)))
    forged = forge.signed_update(inbox, forge.add(stranger.member(), stranger.sign, stranger.sign))  # wrong signer
    with pytest.raises(Refused):
        publish(store, forged)
    assert inbox_of(store, stranger) is None
    publish(store, forge.signed_update(inbox, forge.add(stranger.member(), wallet.sign, stranger.sign)))
    assert sequence_ids(store, inbox) == [1, 2]
    assert inbox_of(store, stranger) == inbox
