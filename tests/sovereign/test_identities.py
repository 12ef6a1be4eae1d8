"""The identity directory on the store: one binding per installation, replaced only for the same account address,
refused past the per-address limit, and read by anyone; every refusal changes nothing."""

from __future__ import annotations

import os

import pytest

from core import eventlog
from protocols.libraries.delivery.codes import ErrorCode
from protocols.sovereign import errors
from protocols.sovereign.commands import MAX_BINDING_BYTES, account_address
from protocols.sovereign.config import Limits

# EIP-55's own examples: checksummed, then all-uppercase and all-lowercase (which carry no checksum).
CHECKSUMMED = (
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
)
UNCHECKSUMMED = ("0x52908400098527886E0F7030069857D2E4169EE7", "0xde709f2102306220921060314715629080e2fb77")
ALICE = CHECKSUMMED[0]
BOB = CHECKSUMMED[1]


def installation() -> str:
    return os.urandom(32).hex()


def directory(store) -> list[tuple]:
    return store.app.db.all("SELECT address, installation, binding, published_at FROM sovereign_identities")


@pytest.mark.parametrize("address", CHECKSUMMED + UNCHECKSUMMED)
def test_addresses_with_a_right_checksum_or_none_are_taken_in_lowercase(address) -> None:
    assert account_address(address) == address.lower()


@pytest.mark.parametrize(
    "address",
    [
        "",
        "0x",
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe",  # 39 digits
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed0",  # 41 digits
        "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed00",  # no 0x
        "0X5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeg",
        "0x5aaEb6053F3E94C9b9A09f33669435E7Ef1BeAed",  # one letter's case flipped: the checksum fails
        " 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        42,
        None,
    ],
)
def test_a_malformed_address_is_bad_address_and_changes_nothing(store, address) -> None:
    head = eventlog.head(store.app.db)
    with pytest.raises(errors.BadAddress) as refused:
        store.identity_publish(installation(), address, b"binding")
    assert refused.value.code == ErrorCode.BAD_ADDRESS and str(refused.value)
    with pytest.raises(errors.BadAddress):
        store.identity_fetch(address)
    assert eventlog.head(store.app.db) == head and directory(store) == []


def test_publish_fetch_replace_and_the_same_bytes_again(store, clock) -> None:
    mine = installation()
    first = store.identity_publish(mine, ALICE, b"signed by alice, v1")
    assert (first.address, first.installation, first.changed) == (ALICE.lower(), mine, True)
    published = store.identity_fetch(ALICE.upper().replace("0X", "0x"))  # any spelling names the same account
    assert published.address == ALICE.lower()
    assert [(b.installation, b.binding) for b in published.installations] == [(mine, b"signed by alice, v1")]
    assert published.installations[0].published_at == clock.now_ms() // 1000

    head = eventlog.head(store.app.db)
    assert not store.identity_publish(mine, ALICE, b"signed by alice, v1").changed  # the same bytes: nothing new
    assert eventlog.head(store.app.db) == head

    clock.advance(5_000)
    assert store.identity_publish(mine, ALICE.lower(), b"signed by alice, v2").changed
    [replaced] = store.identity_fetch(ALICE).installations
    assert (replaced.binding, replaced.published_at) == (b"signed by alice, v2", clock.now_ms() // 1000)
    assert len(directory(store)) == 1


def test_publishing_an_earlier_binding_again_replaces_the_later_one(store) -> None:
    """A, B, then A again: the third fact must not share the first one's id (the log would drop it)."""
    mine = installation()
    for binding in (b"A", b"B", b"A", b"B", b"A"):
        assert store.identity_publish(mine, ALICE, binding).changed
        assert [b.binding for b in store.identity_fetch(ALICE).installations] == [binding]
    assert store.app.db.value("SELECT count(*) FROM events WHERE event_type = 'identity_published'") == 5


def test_an_installation_bound_to_one_address_cannot_bind_to_another(store) -> None:
    mine = installation()
    store.identity_publish(mine, ALICE, b"alice's")
    before, head = directory(store), eventlog.head(store.app.db)
    with pytest.raises(errors.InstallationBound) as refused:
        store.identity_publish(mine, BOB, b"bob's")
    assert refused.value.code == ErrorCode.INSTALLATION_BOUND and ALICE.lower() in str(refused.value)
    assert directory(store) == before and eventlog.head(store.app.db) == head
    assert store.identity_fetch(BOB).installations == []


def test_an_address_has_at_most_the_configured_installations(make_store) -> None:
    store = make_store(Limits(max_installations_per_address=2))
    first, second, third = installation(), installation(), installation()
    store.identity_publish(first, ALICE, b"1")
    store.identity_publish(second, ALICE, b"2")
    before, head = directory(store), eventlog.head(store.app.db)
    with pytest.raises(errors.TooManyInstallations) as refused:
        store.identity_publish(third, ALICE, b"3")
    limit = refused.value
    assert (limit.code, limit.limit, limit.value, limit.allowed) == (
        ErrorCode.TOO_MANY_INSTALLATIONS,
        "max_installations_per_address",
        3,
        2,
    )
    assert directory(store) == before and eventlog.head(store.app.db) == head
    assert store.identity_publish(second, ALICE, b"2, renewed").changed  # replacing is not adding
    assert store.identity_publish(third, BOB, b"3").changed  # the limit is per address


def test_no_limit_when_the_limit_is_zero(make_store) -> None:
    store = make_store(Limits(max_installations_per_address=0))
    for n in range(3):
        store.identity_publish(installation(), ALICE, bytes([n + 1]))
    assert len(store.identity_fetch(ALICE).installations) == 3


@pytest.mark.parametrize(
    "binding, error, code",
    [
        (b"x" * (MAX_BINDING_BYTES + 1), errors.BindingTooLarge, ErrorCode.BINDING_TOO_LARGE),
        (b"", errors.BadBinding, ErrorCode.BAD_BINDING),
        ("text, not bytes", errors.BadBinding, ErrorCode.BAD_BINDING),
        (None, errors.BadBinding, ErrorCode.BAD_BINDING),
    ],
)
def test_a_binding_that_is_empty_or_too_large_is_refused_and_changes_nothing(store, binding, error, code) -> None:
    mine = installation()
    store.identity_publish(mine, ALICE, b"kept")
    before, head = directory(store), eventlog.head(store.app.db)
    with pytest.raises(error) as refused:
        store.identity_publish(mine, ALICE, binding)
    assert refused.value.code == code
    if isinstance(refused.value, errors.LimitExceeded):
        assert (refused.value.limit, refused.value.value, refused.value.allowed) == (
            "max_binding_bytes",
            MAX_BINDING_BYTES + 1,
            MAX_BINDING_BYTES,
        )
    assert directory(store) == before and eventlog.head(store.app.db) == head


def test_a_binding_of_exactly_the_largest_size_is_kept(store) -> None:
    store.identity_publish(installation(), ALICE, b"x" * MAX_BINDING_BYTES)
    assert [len(b.binding) for b in store.identity_fetch(ALICE).installations] == [MAX_BINDING_BYTES]


def test_a_bad_installation_id_is_refused(store) -> None:
    with pytest.raises(errors.BadInstallation):
        store.identity_publish("not hex", ALICE, b"binding")
    assert directory(store) == []


def test_fetch_lists_every_installation_by_id_and_nothing_for_an_unknown_address(store) -> None:
    mine = sorted(installation() for _ in range(5))
    for n, each in enumerate(reversed(mine)):
        store.identity_publish(each, ALICE, f"binding {n}".encode())
    store.identity_publish(installation(), BOB, b"someone else")
    fetched = store.identity_fetch(ALICE)
    assert [b.installation for b in fetched.installations] == mine
    assert store.identity_fetch(CHECKSUMMED[2]).installations == []
    assert store.identity_fetch(CHECKSUMMED[2]).address == CHECKSUMMED[2].lower()


def test_directory_reads_are_served_by_the_address_index(store) -> None:
    from protocols.sovereign.commands import _INSTALLATIONS_OF
    from protocols.sovereign.service import _BINDINGS_OF

    for query in (_BINDINGS_OF, _INSTALLATIONS_OF):
        plan = " ".join(row[3] for row in store.app.db.all("EXPLAIN QUERY PLAN " + query, (ALICE.lower(),)))
        assert "USING" in plan and "sovereign_identities_address (address=?)" in plan, plan
        assert "TEMP B-TREE" not in plan, plan
