"""Forward secrecy and secret hygiene of the group state machine (RFC 9420 §9.2, §15.3, §16.6).

- A message key is used once: the state after decrypting no longer holds it.
- Earlier epochs are kept only for the configured window (``GroupConfig.max_past_epochs``).
- A new epoch keeps none of the secrets that only served to reach it.
- No secret shows in the ``repr`` of a state or a result, or in the text of
  an error raised by a hostile message.
- Confirmation and membership tags are compared in constant time, through
  ``CipherSuite.verify_mac`` and ``hmac.compare_digest``.
"""

from __future__ import annotations

import hmac
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs
import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.errors import ConfirmationMismatch, KeyAlreadyUsed, MlsError, WrongEpoch
from protocols.libraries.mls.group.application import encrypt_application
from protocols.libraries.mls.group.commit import commit
from protocols.libraries.mls.group.external import join_by_external_commit
from protocols.libraries.mls.group.join import join_from_welcome
from protocols.libraries.mls.group.process import process
from protocols.libraries.mls.group.proposals import propose_external_psk, propose_update, with_external_psk
from protocols.libraries.mls.group.refusals import EpochNotRetained
from protocols.libraries.mls.group.results import ApplicationMessage, CommitMessage, ProposalMessage
from protocols.libraries.mls.group.state import GroupConfig, GroupState
from protocols.libraries.mls.protection import EpochView

from ._forge import forged_commit
from ._groups import build_group, capabilities, member_client, signed_group_info
from .test_refusals import LIST_CASES, TRIOS, Setup, Trio, flipped, forged_case

CS = suite(1)


# --- message keys are used once ----------------------------------------------------------------------


def test_an_application_key_is_gone_once_used_whatever_the_order() -> None:
    alice, bob = build_group(CS, [b"alice", b"bob"])
    sent = []
    for text in (b"one", b"two", b"three"):
        message, alice = encrypt_application(alice, text)
        sent.append((message, text))
    for message, text in (sent[2], sent[0], sent[1]):
        result = process(bob, message)
        assert isinstance(result, ApplicationMessage) and result.data == text
        bob = result.new_state
    for message, _ in sent:
        with pytest.raises(KeyAlreadyUsed):
            process(bob, message)


def test_a_private_handshake_key_is_gone_once_used() -> None:
    alice, bob = build_group(CS, [b"alice", b"bob"])
    proposal = propose_update(alice)
    received = process(bob, proposal.message)
    assert isinstance(received, ProposalMessage)
    with pytest.raises(KeyAlreadyUsed):
        process(received.new_state, proposal.message)


# --- the window of earlier epochs ----------------------------------------------------------------------


@pytest.mark.parametrize("window", [0, 1, 3])
def test_earlier_epochs_are_kept_for_the_window_and_dropped_beyond_it(window: int) -> None:
    config = GroupConfig(max_past_epochs=window)
    alice, bob = build_group(CS, [b"alice", b"bob"], config=config)
    exported: dict[int, bytes] = {}
    late: dict[int, bytes] = {}
    for _ in range(window + 2):
        exported[bob.epoch] = bob.exporter(b"window", b"", 32)
        late[bob.epoch], alice = encrypt_application(alice, b"sent in epoch %d" % alice.epoch)
        outcome = commit(alice, force_path=True)
        alice, bob = outcome.new_state, process(bob, outcome.message).new_state
    assert [past.epoch for past in bob.past] == [bob.epoch - back for back in range(1, window + 1)]
    assert sorted(bob.resumption_psks) == list(range(bob.epoch - window, bob.epoch + 1))
    for epoch, value in exported.items():
        if bob.epoch - epoch <= window:
            assert bob.exporter(b"window", b"", 32, epoch=epoch) == value
            result = process(bob, late[epoch])
            assert isinstance(result, ApplicationMessage) and result.data == b"sent in epoch %d" % epoch
        else:
            with pytest.raises(EpochNotRetained, match=f"message is for epoch {epoch}"):
                bob.exporter(b"window", b"", 32, epoch=epoch)
            with pytest.raises(WrongEpoch):
                process(bob, late[epoch])


# --- what a state keeps ----------------------------------------------------------------------------------


def reachable_bytes(value: object) -> Iterator[bytes]:
    """Every bytes value reachable from ``value`` through attrs fields, mappings and sequences."""
    seen: set[int] = set()
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bytes):
            yield item
            continue
        if id(item) in seen or isinstance(item, (CipherSuite, str, int)) or callable(item):
            continue
        seen.add(id(item))
        if attrs.has(type(item)):
            stack.extend(getattr(item, field.name) for field in attrs.fields(type(item)))
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (tuple, list, frozenset, set)):
            stack.extend(item)


def view_secrets(view: EpochView, where: str) -> dict[str, bytes]:
    found = {f"{where} membership key": view.membership_key, f"{where} sender data secret": view.sender_data_secret}
    for node, secret in view.secret_tree.frontier.items():
        found[f"{where} secret tree node {node}"] = secret
    for (leaf, kind), ratchet in view.secret_tree.ratchets.items():
        found[f"{where} {kind} ratchet of leaf {leaf}"] = ratchet.secret
        for generation, key in ratchet.kept.items():
            found[f"{where} {kind} key {generation} of leaf {leaf}"] = key.key
            found[f"{where} {kind} nonce {generation} of leaf {leaf}"] = key.nonce
    return found


def state_secrets(state: GroupState) -> dict[str, bytes]:
    """Every secret a state holds, by a name that says where it sits."""
    keys = state.keys
    found = {
        "signature private key": state.signature_private,
        "init secret": keys.init_secret,
        "exporter secret": keys.exporter_secret,
        "external secret": keys.external_secret,
        "resumption psk": keys.resumption_psk,
        **view_secrets(state.view, "current epoch"),
    }
    for node, pair in state.private.keys.items():
        found[f"private key of node {node}"] = pair.private
    for public, private in state.update_keys.items():
        found[f"update key {public.hex()[:8]}"] = private
    for psk_id, secret in state.external_psks.items():
        found[f"external psk {psk_id!r}"] = secret
    for epoch, secret in state.resumption_psks.items():
        found[f"resumption psk of epoch {epoch}"] = secret
    for past in state.past:
        found[f"exporter secret of epoch {past.epoch}"] = past.exporter_secret
        found.update(view_secrets(past.view, f"epoch {past.epoch}"))
    if state.pending_commit is not None:
        found.update(
            {f"pending {name}": value for name, value in state_secrets(state.pending_commit.new_state).items()}
        )
    return found


@attrs.define
class Transient:
    """Secrets the engine derived on the way to an epoch and should not keep, by name."""

    secrets: dict[str, bytes] = attrs.Factory(dict)

    def add(self, kind: str, **named: bytes | None) -> None:
        for name, value in named.items():
            if value:
                self.secrets[f"{kind} {name} #{len(self.secrets)}"] = value


@pytest.fixture
def transient(monkeypatch: pytest.MonkeyPatch) -> Transient:
    """Records every key schedule step's and every UpdatePath's secrets as the engine computes them."""
    found = Transient()

    def recording(target: str, record: Callable[[Any], None]) -> None:
        module, name = target.rsplit(".", 1)
        real = getattr(importlib.import_module(module), name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            record(result)
            return result

        monkeypatch.setattr(target, wrapper)

    def new_epoch(new: Any) -> None:
        found.add(
            "key schedule",
            joiner_secret=new.joiner_secret,
            welcome_secret=new.welcome_secret,
            confirmation_key=new.secrets.confirmation_key,
        )

    for module in ("commit", "process", "external"):
        recording(f"protocols.libraries.mls.group.{module}.next_epoch", new_epoch)
    recording(
        "protocols.libraries.mls.group.join.epoch_secrets",
        lambda secrets: found.add("welcome", confirmation_key=secrets.confirmation_key),
    )
    for module in ("commit", "external"):
        recording(
            f"protocols.libraries.mls.group.{module}.create_update_path",
            lambda created: found.add(
                "created path",
                commit_secret=created.commit_secret,
                **{f"path_secret_{node}": secret for node, secret in created.path_secrets.items()},
            ),
        )
    recording(
        "protocols.libraries.mls.group.process.receive_update_path",
        lambda received: found.add("received path", commit_secret=received.commit_secret, path=received.path_secret),
    )
    recording(
        "protocols.libraries.mls.group.join.open_group_secrets",
        lambda opened: found.add(
            "group secrets",
            joiner_secret=opened.joiner_secret,
            path_secret=None if opened.path_secret is None else opened.path_secret.path_secret,
        ),
    )
    return found


def test_a_new_epoch_keeps_none_of_the_secrets_that_led_to_it(transient: Transient) -> None:
    alice, bob, carol = build_group(CS, [b"alice", b"bob", b"carol"])
    dave = member_client(CS, b"dave")
    outcome = commit(alice, [m.Add(dave.key_package)], force_path=True)
    assert outcome.welcome is not None
    after = [
        outcome.new_state,
        process(bob, outcome.message).new_state,
        process(carol, outcome.message).new_state,
        join_from_welcome(outcome.welcome, dave.key_package, dave.secrets),
    ]
    assert len({state.epoch_authenticator for state in after}) == 1
    kinds = {name.split(" #")[0] for name in transient.secrets}
    assert kinds >= {
        "key schedule joiner_secret",
        "key schedule welcome_secret",
        "key schedule confirmation_key",
        "created path commit_secret",
        "received path path",
        "group secrets path_secret",
    }
    used = {
        **transient.secrets,
        "alice's old leaf key": alice.private.keys[0].private,
        "old init secret": alice.keys.init_secret,
        "dave's init key": dave.secrets.init_private,
    }
    for state in after:
        kept = set(reachable_bytes(state))
        assert [name for name, secret in used.items() if secret in kept] == []


def test_an_update_key_is_dropped_when_its_epoch_ends_uncommitted() -> None:
    alice, bob = build_group(CS, [b"alice", b"bob"])
    proposal = propose_update(bob)
    [update_key] = proposal.new_state.update_keys.values()
    alice = process(alice, proposal.message).new_state
    outcome = commit(alice, by_reference=(), force_path=True)
    bob = process(proposal.new_state, outcome.message).new_state
    assert bob.update_keys == {} and update_key not in set(reachable_bytes(bob))


# --- nothing secret in a repr or an error ------------------------------------------------------------------


def leaked(text: str, secrets: Mapping[str, bytes]) -> list[str]:
    """The names of ``secrets`` that ``text`` shows, as escaped bytes, in hex, or by a hex prefix."""
    return [
        name
        for name, secret in secrets.items()
        if len(secret) >= 8 and any(form in text for form in (repr(secret)[2:-1], secret.hex(), secret.hex()[:16]))
    ]


def error_text(error: BaseException) -> str:
    """What a log line could show of ``error``: its text and repr, and those of its causes."""
    parts = []
    current: BaseException | None = error
    while current is not None:
        parts += [str(current), repr(current), repr(current.args)]
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def test_no_secret_shows_in_the_repr_of_states_or_results(transient: Transient) -> None:
    alice, bob = build_group(CS, [b"alice", b"bob"], config=GroupConfig(max_past_epochs=2))
    alice, bob = (with_external_psk(state, b"psk", b"pre-shared secret key") for state in (alice, bob))
    shown: list[object] = []
    psk = propose_external_psk(alice, b"psk")
    update = propose_update(bob)
    alice_received = process(psk.new_state, update.message)
    bob_received = process(update.new_state, psk.message)
    carol = member_client(CS, b"carol")
    outcome = commit(alice_received.new_state, [m.Add(carol.key_package)])
    assert outcome.welcome is not None
    bob_commit = process(bob_received.new_state, outcome.message)
    own_commit = process(outcome.pending_state, outcome.message)
    carol_state = join_from_welcome(
        outcome.welcome, carol.key_package, carol.secrets, external_psks={b"psk": b"pre-shared secret key"}
    )
    message, bob_after = encrypt_application(bob_commit.new_state, b"application data")
    application = process(carol_state, message)
    assert isinstance(application, ApplicationMessage)
    erin = member_client(CS, b"erin")
    joined = join_by_external_commit(
        signed_group_info(bob_after), m.BasicCredential(b"erin"), erin.signature, capabilities=capabilities(CS)
    )
    external = process(bob_after, joined.message)
    states = [
        alice,
        psk.new_state,
        alice_received.new_state,
        bob_received.new_state,
        outcome.new_state,
        outcome.pending_state,
        bob_commit.new_state,
        own_commit.new_state,
        carol_state,
        bob_after,
        application.new_state,
        joined.new_state,
        external.new_state,
    ]
    shown += [psk, update, alice_received, bob_received, outcome, bob_commit, own_commit, application, joined, external]
    for state in states:
        shown += [state, state.keys, state.view, state.private, state.past, state.pending_commit, state.config]
    secrets = {**transient.secrets, "carol's init key": carol.secrets.init_private}
    for state in states:
        secrets.update({f"{name} of {state.own_leaf}@{state.epoch}": v for name, v in state_secrets(state).items()})
    assert leaked(repr(attrs.asdict(alice.keys)), state_secrets(alice))  # the check sees a secret when it shows
    assert application.data == b"application data" and "application data" not in repr(application)
    assert [(type(item).__name__, leaked(repr(item), secrets)) for item in shown if leaked(repr(item), secrets)] == []


def flipped_ciphertext(message: bytes) -> bytes:
    private = decode(m.MLSMessage, message).message
    assert isinstance(private, m.PrivateMessage)
    tampered = attrs.evolve(private, ciphertext=flipped(private.ciphertext))
    return encode(m.MLSMessage(m.ProtocolVersion.MLS10, tampered))


def replayed(t: Trio) -> tuple[GroupState, bytes]:
    message, _ = encrypt_application(t.bob, b"hello")
    return process(t.dave, message).new_state, message


def forged_list(setup: Setup) -> Callable[[Trio], tuple[GroupState, bytes]]:
    def hostile(t: Trio) -> tuple[GroupState, bytes]:
        t, forged = forged_case(setup, t)
        return t.dave, forged

    return hostile


#: Hostile messages: from the trio of test_refusals, the state that receives each and the message.
HOSTILE: list[tuple[str, Callable[[Trio], tuple[GroupState, bytes]]]] = [
    ("tampered confirmation tag", lambda t: (t.dave, forged_commit(t.alice, [], tag=b"\x00" * CS.nh))),
    ("tampered ciphertext", lambda t: (t.dave, flipped_ciphertext(encrypt_application(t.bob, b"hello")[0]))),
    ("replayed application message", replayed),
    ("our own message", lambda t: (t.dave, encrypt_application(t.dave, b"mine")[0])),
    ("future epoch", lambda t: (t.dave, encrypt_application(commit(t.alice, force_path=True).new_state, b"x")[0])),
    *[(f"commit: {name}", forged_list(setup)) for name, setup, _, _ in LIST_CASES],
]


@pytest.mark.parametrize("handshakes", ["public", "private"])
@pytest.mark.parametrize("hostile", [case for _, case in HOSTILE], ids=[name for name, _ in HOSTILE])
def test_no_secret_shows_in_the_error_a_hostile_message_raises(
    hostile: Callable[[Trio], tuple[GroupState, bytes]], handshakes: str, transient: Transient
) -> None:
    t = TRIOS[handshakes]
    receiver, message = hostile(t)
    with pytest.raises(MlsError) as refused:
        process(receiver, message)
    secrets = {**transient.secrets}
    for name, state in (("alice", t.alice), ("bob", t.bob), ("dave", t.dave), ("receiver", receiver)):
        secrets.update({f"{name}'s {secret}": value for secret, value in state_secrets(state).items()})
    assert leaked(error_text(refused.value), secrets) == []
    assert leaked(error_text(MlsError(f"key {receiver.keys.init_secret.hex()}")), secrets)


def test_no_secret_shows_in_the_error_a_refused_welcome_raises() -> None:
    alice, _ = build_group(CS, [b"alice", b"bob"])
    alice = with_external_psk(alice, b"psk", b"pre-shared secret key")
    carol, frank = member_client(CS, b"carol"), member_client(CS, b"frank")
    psk = propose_external_psk(alice, b"psk")
    outcome = commit(psk.new_state, [m.Add(carol.key_package)])
    assert outcome.welcome is not None
    secrets = {
        **state_secrets(outcome.new_state),
        "carol's init key": carol.secrets.init_private,
        "frank's init key": frank.secrets.init_private,
        "the psk": b"pre-shared secret key",
    }
    wrong_psk = {b"psk": b"another secret key"}
    for joiner, psks in ((frank, None), (carol, None), (carol, wrong_psk)):
        with pytest.raises(MlsError) as refused:
            join_from_welcome(outcome.welcome, joiner.key_package, joiner.secrets, external_psks=psks)
        assert leaked(error_text(refused.value), secrets) == []


# --- tags compared in constant time ------------------------------------------------------------------------


@pytest.fixture
def compare_digest_calls(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The result of every ``hmac.compare_digest`` call from now on."""
    calls: list[bool] = []
    real = hmac.compare_digest

    def counting(a: Any, b: Any) -> bool:
        calls.append(real(a, b))
        return calls[-1]

    monkeypatch.setattr(hmac, "compare_digest", counting)
    return calls


@pytest.fixture
def verified_macs(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every tag checked through ``CipherSuite.verify_mac`` from now on."""
    tags: list[bytes] = []
    real = CipherSuite.verify_mac

    def recording(self: CipherSuite, key: bytes, data: bytes, tag: bytes) -> bool:
        tags.append(tag)
        return real(self, key, data, tag)

    monkeypatch.setattr(CipherSuite, "verify_mac", recording)
    return tags


@pytest.mark.parametrize("cs", [suite(i) for i in range(1, 8)], ids=[f"suite-{i}" for i in range(1, 8)])
def test_verify_mac_compares_with_hmac_compare_digest(cs: CipherSuite, compare_digest_calls: list[bool]) -> None:
    tag = cs.mac(b"key", b"data")
    assert cs.verify_mac(b"key", b"data", tag) is True
    assert cs.verify_mac(b"key", b"data", flipped(tag)) is False
    assert cs.verify_mac(b"key", b"data", tag[:-1]) is False
    assert compare_digest_calls == [True, False, False]


def test_a_public_commit_checks_both_tags_through_verify_mac(
    verified_macs: list[bytes], compare_digest_calls: list[bool]
) -> None:
    t = TRIOS["public"]
    outcome = commit(t.alice, force_path=True)
    public = decode(m.MLSMessage, outcome.message).message
    assert isinstance(public, m.PublicMessage)
    assert isinstance(process(t.dave, outcome.message), CommitMessage)
    assert verified_macs == [public.membership_tag, public.auth.confirmation_tag]
    assert compare_digest_calls == [True, True]


def test_a_private_commit_checks_its_confirmation_tag_through_verify_mac(
    verified_macs: list[bytes], compare_digest_calls: list[bool]
) -> None:
    t = TRIOS["private"]
    outcome = commit(t.alice, force_path=True)
    result = process(t.dave, outcome.message)
    assert isinstance(result, CommitMessage)
    assert verified_macs == [result.new_state.keys.confirmation_tag]
    assert compare_digest_calls == [True]


@pytest.mark.parametrize("handshakes", ["public", "private"])
def test_a_wrong_confirmation_tag_is_found_by_compare_digest(
    handshakes: str, verified_macs: list[bytes], compare_digest_calls: list[bool]
) -> None:
    t = TRIOS[handshakes]
    wrong = b"\x00" * CS.nh
    with pytest.raises(ConfirmationMismatch):
        process(t.dave, forged_commit(t.alice, [], tag=wrong))
    assert verified_macs[-1] == wrong and compare_digest_calls[-1] is False
