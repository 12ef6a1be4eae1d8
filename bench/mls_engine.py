"""The RFC 9420 engine's side of bench/mls.py: building groups, timing commits, application messages, the ceiling.

Every group is built the same way, here and in bench/mls_ts.mjs for ts-mls:
one commit by the creator (alice, leaf 0) adds every other member's
KeyPackage at once (Adds need no path, so every parent node stays blank);
bob (leaf 1) joins from its Welcome; then alice commits an empty commit
with a path, which bob processes, so alice's direct path holds keys.  No
other member's state is kept: the measured operations are alice's commits
and bob's processing of them, and a member that is never measured never
needs to exist beyond its leaf in the tree.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

import attrs
from mls_counting import Counts, counting

from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.crypto import CipherSuite
from protocols.libraries.mls.crypto.labels import (
    derive_tree_secret,
    expand_with_label,
    sign_with_label,
    verify_with_label,
)
from protocols.libraries.mls.group.application import encrypt_application
from protocols.libraries.mls.group.commit import CommitOutcome, commit
from protocols.libraries.mls.group.create import create_group
from protocols.libraries.mls.group.join import join_from_welcome
from protocols.libraries.mls.group.key_packages import KeyPackageSecrets, create_key_package
from protocols.libraries.mls.group.process import process
from protocols.libraries.mls.group.results import ApplicationMessage, CommitMessage
from protocols.libraries.mls.group.state import GroupState
from protocols.libraries.mls.messages import (
    Add,
    ApplicationData,
    BasicCredential,
    FramedContent,
    KeyPackage,
    MLSMessage,
    PrivateContentAAD,
    PrivateMessage,
    Proposal,
    Remove,
    SenderDataAAD,
    SenderMember,
    WireFormat,
)
from protocols.libraries.mls.protection.signing import SIGN_LABEL, framed_content_tbs

T = TypeVar("T")

GROUP_ID = b"tessera-bench-mls"
OPERATIONS = ("add", "update", "remove")
AEAD_TAG = 16


@attrs.frozen
class Group:
    """A built group: the committer's and the receiver's states, and what building it took.

    Attributes:
        members: the group's size.
        alice: the creator's state (leaf 0), the committer of every measured commit.
        bob: leaf 1's state, the receiver of every measured commit and application message.
        build_seconds: seconds per building step (key packages, the adding commit, bob's join, alice's path).
    """

    members: int
    alice: GroupState = attrs.field(repr=False)
    bob: GroupState = attrs.field(repr=False)
    build_seconds: dict[str, float]


@attrs.frozen
class OperationResult:
    """One commit kind at one group size.

    Attributes:
        operation: ``add``, ``update`` (an empty commit with a path) or ``remove``.
        members: the group's size before the commit.
        runs: timed runs of each side (the fastest is reported: the machine is shared, see ``best_run``).
        create_s: seconds for alice to create the commit (and its Welcome for an Add).
        process_s: seconds for bob to process it; ``None`` when bob is the member it removes.
        commit_bytes: size of the commit message.
        welcome_bytes: size of the Welcome (Adds only, else 0).
        create_counts: HPKE, hash and DeriveKeyPair calls of one creation.
        process_counts: the same for one processing (``None`` with ``process_s``).
    """

    operation: str
    members: int
    runs: int
    create_s: float
    process_s: float | None
    commit_bytes: int
    welcome_bytes: int
    create_counts: Counts
    process_counts: Counts | None


@attrs.frozen
class ApplicationResult:
    """Application-message rates at one group size, beside their crypto ceiling; each the best of three rounds.

    Attributes:
        members: the group's size.
        messages: messages encrypted by alice, then decrypted in order by bob.
        payload_bytes: application data per message.
        encrypt_per_s / decrypt_per_s: the engine's rates.
        ceiling_encrypt_per_s / ceiling_decrypt_per_s: the same messages' AEAD and key derivations alone
            (sender-data key and nonce, ratchet key, nonce and next secret, two AEAD calls).
        signed_ceiling_encrypt_per_s / signed_ceiling_decrypt_per_s: the ceiling plus the
            SignWithLabel / VerifyWithLabel every PrivateMessage also needs.
    """

    members: int
    messages: int
    payload_bytes: int
    encrypt_per_s: float
    decrypt_per_s: float
    ceiling_encrypt_per_s: float
    ceiling_decrypt_per_s: float
    signed_ceiling_encrypt_per_s: float
    signed_ceiling_decrypt_per_s: float


def best_run(fn: Callable[[], T], runs: int) -> tuple[float, T]:
    """The fewest seconds of ``runs`` calls of ``fn``, and the last call's result.

    The fastest run, as ``timeit`` advises: every run does the same work
    (states are values), so slower runs only measure other processes
    sharing the cores.
    """
    seconds = []
    result: T
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - start)
    return min(seconds), result


def new_key_package(cs: CipherSuite, name: bytes) -> tuple[KeyPackage, KeyPackageSecrets]:
    return create_key_package(cs, BasicCredential(name), cs.generate_signature_key_pair())


# --- building a group --------------------------------------------------------------------------


def build_group(cs: CipherSuite, members: int, status: Callable[[str], None]) -> Group:
    """A ``members``-member group built as the module docstring says; ``status`` names each long step."""
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    packages = []
    for index in range(1, members):
        if index % 100 == 1:
            status(f"{members:,}-member group: key packages {index:,}/{members - 1:,}")
        packages.append(new_key_package(cs, b"member-%d" % index))
    seconds["key packages"] = time.perf_counter() - start
    alice = create_group(cs, GROUP_ID, BasicCredential(b"alice"), cs.generate_signature_key_pair())
    status(f"{members:,}-member group: one commit adding {members - 1:,} members")
    adding, seconds["adding commit"] = _timed(lambda: commit(alice, [Add(kp) for kp, _ in packages]))
    assert adding.welcome is not None
    status(f"{members:,}-member group: bob joins from the Welcome (validating the whole tree)")
    bob, seconds["bob joins"] = _timed(lambda: join_from_welcome(adding.welcome or b"", *packages[0]))
    status(f"{members:,}-member group: alice's first path")
    path, seconds["alice's first path"] = _timed(lambda: commit(adding.new_state, force_path=True))
    bob = _processed(bob, path)
    return Group(members, path.new_state, bob, seconds)


#: The clock application messages and their ceilings are timed with: wall time, or the process's CPU time
#: (``bench/mls.py --cpu-time``), which leaves out the waits of a machine other work keeps busy.
APPLICATION_CLOCK: list[Callable[[], float]] = [time.perf_counter]


def _now() -> float:
    return APPLICATION_CLOCK[0]()


def _timed(fn: Callable[[], T]) -> tuple[T, float]:
    start = _now()
    result = fn()
    return result, _now() - start


def _processed(receiver: GroupState, outcome: CommitOutcome) -> GroupState:
    """The receiver after the commit, checked to be in the committer's new epoch."""
    result = process(receiver, outcome.message)
    assert isinstance(result, CommitMessage) and not result.we_were_removed
    assert result.new_state.epoch_authenticator == outcome.new_state.epoch_authenticator
    return result.new_state


# --- commits -----------------------------------------------------------------------------------


def removed_leaf(members: int) -> int:
    """The leaf the Remove commit removes: a middle one, or bob when he is the only other member."""
    return members // 2 if members > 2 else 1


def operation_commit(cs: CipherSuite, operation: str, members: int) -> tuple[tuple[Proposal, ...], bool]:
    """The proposals and force-path flag of one measured commit kind."""
    if operation == "add":
        return (Add(new_key_package(cs, b"newcomer")[0]),), False
    if operation == "update":
        return (), True
    return (Remove(removed_leaf(members)),), False


def measure_operation(group: Group, operation: str, runs: int) -> OperationResult:
    """Time alice creating one ``operation`` commit and bob processing it, then count one of each."""
    proposals, force_path = operation_commit(group.alice.suite, operation, group.members)

    def create() -> CommitOutcome:
        return commit(group.alice, proposals, force_path=force_path)

    create_s, outcome = best_run(create, runs)
    with counting() as create_counts:
        create()
    bob_removed = operation == "remove" and removed_leaf(group.members) == group.bob.own_leaf
    process_s = process_counts = None
    if not bob_removed:
        process_s, _ = best_run(lambda: _processed(group.bob, outcome), runs)
        with counting() as process_counts:
            process(group.bob, outcome.message)
    welcome = len(outcome.welcome) if outcome.welcome else 0
    return OperationResult(
        operation,
        group.members,
        runs,
        create_s,
        process_s,
        len(outcome.message),
        welcome,
        create_counts,
        process_counts,
    )


# --- application messages ----------------------------------------------------------------------


def measure_application(group: Group, messages: int, payload: bytes, rounds: int = 3) -> ApplicationResult:
    """Alice encrypts ``messages`` messages, bob decrypts them in order; beside the ceiling, best of ``rounds``.

    Each round runs the engine and both ceilings back to back, so a busy
    moment of the shared machine does not fall on one side only.
    """
    best = [0.0] * 6
    ceiling: Ceiling | None = None
    for _ in range(rounds):
        sent, encrypt_s = _timed(partial(_encrypt_all, group.alice, messages, payload))
        decrypt_s = _timed(partial(_decrypt_all, group.bob, sent, payload))[1]
        ceiling = ceiling or Ceiling.of(group.alice, sent[0], payload)
        engine = (messages / encrypt_s, messages / decrypt_s)
        rates = engine + ceiling.rates(messages, signed=False) + ceiling.rates(messages, signed=True)
        best = [max(pair) for pair in zip(best, rates, strict=True)]
    return ApplicationResult(group.members, messages, len(payload), *best)


def _encrypt_all(sender: GroupState, messages: int, payload: bytes) -> list[bytes]:
    sent = []
    for _ in range(messages):
        message, sender = encrypt_application(sender, payload)
        sent.append(message)
    return sent


def _decrypt_all(receiver: GroupState, sent: list[bytes], payload: bytes) -> None:
    for message in sent:
        received = process(receiver, message)
        assert isinstance(received, ApplicationMessage) and received.data == payload
        receiver = received.new_state


@attrs.frozen
class Ceiling:
    """The cryptography a PrivateMessage cannot avoid, on inputs of the engine's own sizes.

    Per message, sending: the ratchet's key, nonce and next secret
    (DeriveTreeSecret x3), the content AEAD seal, the sender-data key and
    nonce from the ciphertext sample (ExpandWithLabel x2) and the sender-data
    seal; receiving: the same derivations and two opens.  ``signed`` adds
    SignWithLabel / VerifyWithLabel over the message's real FramedContentTBS.
    """

    suite: CipherSuite
    content: bytes
    content_aad: bytes
    sender_data: bytes
    sender_data_aad: bytes
    tbs: bytes

    @classmethod
    def of(cls, state: GroupState, message: bytes, payload: bytes) -> Ceiling:
        inner = decode(MLSMessage, message).message
        assert isinstance(inner, PrivateMessage)
        aad = PrivateContentAAD(inner.group_id, inner.epoch, inner.content_type, inner.authenticated_data)
        framed = FramedContent(inner.group_id, inner.epoch, SenderMember(0), b"", ApplicationData(payload))
        tbs = framed_content_tbs(WireFormat.MLS_PRIVATE_MESSAGE, framed, state.context)
        return cls(
            state.suite,
            bytes(len(inner.ciphertext) - AEAD_TAG),
            encode(aad),
            bytes(len(inner.encrypted_sender_data) - AEAD_TAG),
            encode(SenderDataAAD(inner.group_id, inner.epoch, inner.content_type)),
            encode(tbs),
        )

    def rates(self, messages: int, *, signed: bool) -> tuple[float, float]:
        """(sent per second, received per second) over ``messages`` messages."""
        send, receive = self._round(messages, signed)
        return messages / send, messages / receive

    def _round(self, messages: int, signed: bool) -> tuple[float, float]:
        cs = self.suite
        signing = cs.generate_signature_key_pair()
        ratchet, sender_data_secret = bytes(cs.nh), bytes(range(cs.nh))
        sent: list[tuple[bytes, bytes, bytes]] = []
        start = _now()
        secret = ratchet
        for generation in range(messages):
            key, nonce, secret = self._ratchet(secret, generation)
            signature = sign_with_label(cs, signing.private, SIGN_LABEL, self.tbs) if signed else b""
            ciphertext = cs.seal(key, nonce, self.content_aad, self.content)
            data_key, data_nonce = self._sender_data_key(sender_data_secret, ciphertext)
            sent.append((cs.seal(data_key, data_nonce, self.sender_data_aad, self.sender_data), ciphertext, signature))
        send = _now() - start
        start = _now()
        secret = ratchet
        for generation, (sealed_sender, ciphertext, signature) in enumerate(sent):
            data_key, data_nonce = self._sender_data_key(sender_data_secret, ciphertext)
            cs.open(data_key, data_nonce, self.sender_data_aad, sealed_sender)
            key, nonce, secret = self._ratchet(secret, generation)
            cs.open(key, nonce, self.content_aad, ciphertext)
            if signed:
                assert verify_with_label(cs, signing.public, SIGN_LABEL, self.tbs, signature)
        return send, _now() - start

    def _ratchet(self, secret: bytes, generation: int) -> tuple[bytes, bytes, bytes]:
        cs = self.suite
        return (
            derive_tree_secret(cs, secret, "key", generation, cs.nk),
            derive_tree_secret(cs, secret, "nonce", generation, cs.nn),
            derive_tree_secret(cs, secret, "secret", generation, cs.nh),
        )

    def _sender_data_key(self, sender_data_secret: bytes, ciphertext: bytes) -> tuple[bytes, bytes]:
        cs = self.suite
        sample = ciphertext[: cs.nh]
        return (
            expand_with_label(cs, sender_data_secret, "key", sample, cs.nk),
            expand_with_label(cs, sender_data_secret, "nonce", sample, cs.nn),
        )


# --- profiles ----------------------------------------------------------------------------------


def profiled(fn: Callable[[], object], limit: int) -> str:
    """cProfile's ``limit`` costliest functions of one call of ``fn``, by cumulative time."""
    profile = cProfile.Profile()
    profile.runcall(fn)
    out = io.StringIO()
    pstats.Stats(profile, stream=out).strip_dirs().sort_stats("cumulative").print_stats(limit)
    return out.getvalue().rstrip()


def profile_processing(group: Group, operation: str, limit: int) -> str:
    """The profile of bob processing one ``operation`` commit of alice's (created outside the profile)."""
    proposals, force_path = operation_commit(group.alice.suite, operation, group.members)
    outcome = commit(group.alice, proposals, force_path=force_path)
    return profiled(lambda: process(group.bob, outcome.message), limit)


def profile_decrypting(group: Group, messages: int, payload: bytes, limit: int) -> str:
    """The profile of bob decrypting ``messages`` application messages of alice's (encrypted outside it)."""
    sent = _encrypt_all(group.alice, messages, payload)
    return profiled(lambda: _decrypt_all(group.bob, sent, payload), limit)
