"""The group engine: an abstract interface and the shipped flat-tree engine.

:class:`GroupEngine` is what plugins (Marmot, later an XMTP-style plugin)
program against, so a full RFC 9420 binding can replace the shipped engine
without touching them.  :class:`FlatTreeEngine` is the shipped engine:
RFC 9420's key schedule, secret tree, labels, HPKE and signatures for cipher
suite 1, over a *flat* roster instead of a ratchet tree (see
docs/mls-engine.md for exactly what that means for security).

The engine is pure: every operation takes state values and returns new
ones; nothing is mutated, nothing is stored.  Every function that needs
randomness takes ``rng`` (``Callable[[int], bytes]``, default
``os.urandom``); with the same rng stream the outputs are byte-identical.

The module-level functions are the implementation; :data:`ENGINE` is a
ready :class:`FlatTreeEngine` that exposes them as methods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from . import application, credentials, framing, proposing, receive, welcome
from . import flat_group as group
from . import commit as commits
from . import snapshot as snapshots
from .credentials import Identity, KeyPackage, KeyPackagePrivate
from .errors import InvalidArgument
from .framing import MessageHeader
from .results import CommitResult, ProcessResult
from .state import DEFAULT_MAX_PAST_EPOCHS, GroupState
from .suite import Rng

# --- module-level API -------------------------------------------------------------

new_identity = credentials.new_identity
identity_to_bytes = credentials.identity_to_bytes
identity_from_bytes = credentials.identity_from_bytes
create_key_package = credentials.create_key_package
key_package_to_bytes = credentials.key_package_to_bytes
key_package_from_bytes = credentials.key_package_from_bytes
key_package_private_to_bytes = credentials.key_package_private_to_bytes
key_package_private_from_bytes = credentials.key_package_private_from_bytes
create_group = group.create_group
exporter_secret = group.exporter_secret
propose = proposing.propose
encrypt_application = application.encrypt_application
process_message = receive.process_message
join_from_welcome = welcome.join_from_welcome
snapshot = snapshots.snapshot
restore = snapshots.restore


def peek(message: bytes) -> MessageHeader:
    """Cleartext header (group id, epoch, content type) of a group message; no keys needed."""
    return framing.peek(message)


def _key_packages(add: Iterable[KeyPackage | bytes]) -> list[KeyPackage]:
    out = []
    for kp in add:
        if isinstance(kp, (bytes, bytearray)):
            kp = credentials.key_package_from_bytes(bytes(kp))
        if not isinstance(kp, KeyPackage):
            raise InvalidArgument("add must contain KeyPackage objects (or their bytes)")
        out.append(kp)
    return out


def _credentials(remove: Iterable[str]) -> list[str]:
    if isinstance(remove, str):
        raise InvalidArgument("remove must be a list of credentials, not a single string")
    return list(remove)


def commit(
    state: GroupState,
    *,
    add: Iterable[KeyPackage | bytes] = (),
    remove: Iterable[str] = (),
    self_update: bool = False,
    proposals_by_ref: Iterable[bytes] = (),
    admins: Iterable[str] | None = None,
    rng: Rng | None = None,
) -> CommitResult:
    """Commit adds, removes (by credential), pending proposals (by ref), an admin-set change
    and/or a self-update (fresh HPKE and signature keys for our leaf).

    Returns the commit message, a Welcome per added credential, our state at
    epoch + 1 (``new_state``) and our current-epoch state to keep while the
    commit is in flight (``pending_state``).  Non-admins may only commit a
    pure self-update (:class:`UnauthorizedCommit`).
    """
    return commits.create_commit(
        state,
        add=_key_packages(add),
        remove=_credentials(remove),
        self_update=bool(self_update),
        proposals_by_ref=[bytes(r) for r in proposals_by_ref],
        admins=None if admins is None else _credentials(admins),
        rng=rng,
    )


# --- the interface ----------------------------------------------------------------


@runtime_checkable
class GroupEngine(Protocol):
    """What a group-cryptography engine offers Tessera's protocol plugins."""

    def new_identity(self, nostr_pubkey_hex: str, *, rng: Rng | None = None) -> Identity: ...
    def identity_to_bytes(self, identity: Identity) -> bytes: ...
    def identity_from_bytes(self, data: bytes) -> Identity: ...
    def create_key_package(
        self, identity: Identity, *, rng: Rng | None = None
    ) -> tuple[KeyPackage, KeyPackagePrivate]: ...
    def key_package_to_bytes(self, kp: KeyPackage) -> bytes: ...
    def key_package_from_bytes(self, data: bytes, *, verify: bool = True) -> KeyPackage: ...
    def key_package_private_to_bytes(self, priv: KeyPackagePrivate) -> bytes: ...
    def key_package_private_from_bytes(self, data: bytes) -> KeyPackagePrivate: ...
    def create_group(
        self,
        identity: Identity,
        group_id: bytes,
        *,
        admins: set[str] | None = None,
        max_past_epochs: int = DEFAULT_MAX_PAST_EPOCHS,
        rng: Rng | None = None,
    ) -> GroupState: ...
    def commit(
        self,
        state: GroupState,
        *,
        add: Iterable[KeyPackage | bytes] = (),
        remove: Iterable[str] = (),
        self_update: bool = False,
        proposals_by_ref: Iterable[bytes] = (),
        admins: Iterable[str] | None = None,
        rng: Rng | None = None,
    ) -> CommitResult: ...
    def propose(
        self,
        state: GroupState,
        *,
        add: KeyPackage | None = None,
        remove: str | None = None,
        self_remove: bool = False,
        rng: Rng | None = None,
    ) -> tuple[bytes, GroupState]: ...
    def encrypt_application(
        self, state: GroupState, plaintext: bytes, *, rng: Rng | None = None
    ) -> tuple[bytes, GroupState]: ...
    def process_message(self, state: GroupState, message: bytes) -> ProcessResult: ...
    def peek(self, message: bytes) -> MessageHeader: ...
    def join_from_welcome(
        self,
        identity: Identity,
        key_package_private: KeyPackagePrivate,
        welcome: bytes,
        *,
        max_past_epochs: int = DEFAULT_MAX_PAST_EPOCHS,
    ) -> GroupState: ...
    def exporter_secret(
        self,
        state: GroupState,
        label: str = "marmot",
        context: bytes = b"group-event",
        length: int = 32,
        *,
        epoch: int | None = None,
    ) -> bytes: ...
    def snapshot(self, state: GroupState) -> bytes: ...
    def restore(self, data: bytes) -> GroupState: ...


def _method(fn):
    """Expose a module-level function as an engine method (ignoring ``self``)."""

    def method(self, *args, **kwargs):
        return fn(*args, **kwargs)

    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


class FlatTreeEngine:
    """The shipped engine: RFC 9420 key schedule over a flat roster (not full MLS)."""

    name = "flat-tree-v1"
    new_identity = _method(new_identity)
    identity_to_bytes = _method(identity_to_bytes)
    identity_from_bytes = _method(identity_from_bytes)
    create_key_package = _method(create_key_package)
    key_package_to_bytes = _method(key_package_to_bytes)
    key_package_from_bytes = _method(key_package_from_bytes)
    key_package_private_to_bytes = _method(key_package_private_to_bytes)
    key_package_private_from_bytes = _method(key_package_private_from_bytes)
    create_group = _method(create_group)
    commit = _method(commit)
    propose = _method(propose)
    encrypt_application = _method(encrypt_application)
    process_message = _method(process_message)
    peek = _method(peek)
    join_from_welcome = _method(join_from_welcome)
    exporter_secret = _method(exporter_secret)
    snapshot = _method(snapshot)
    restore = _method(restore)


ENGINE: GroupEngine = FlatTreeEngine()
