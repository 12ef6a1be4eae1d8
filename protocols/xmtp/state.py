"""The client's secrets in core ``protocol_state``, sealed, and every read and write of them.

Names (``<gid>`` = the group id in hex):

``identity``
    our account key, installation key, the binding between them and the
    server we registered with (:class:`Identity`), in the private profile;
``inbox``
    our account key, installation key, inbox id and the XMTP node, in the
    node profile (:class:`~protocols.xmtp.node_profile.inbox.Inbox`);
``group/<gid>``
    the engine snapshot of our state in the group;
``kp/<ref>``
    a KeyPackage of ours that the server may hand out, with its private keys,
    until a welcome uses it.

Every value is sealed under ``TESSERA_XMTP_STATE_KEY`` (or the file
``TESSERA_XMTP_STATE_KEY_FILE`` names) by :mod:`protocols.libraries.at_rest`.
Inside handlers and commands values are read through ``ctx.state`` and
written by returning the ``WriteProtocolState`` intents made here.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from functools import partial

import attrs

from core import contract
from core.errors import ConfigurationError
from core.intents import UNCHANGED, StageProtocolState, WriteProtocolState
from core.state import ProtocolState
from protocols.libraries import at_rest, erasable, mls
from protocols.xmtp.errors import GroupUnknown, IdentityMissing, NodeProfileOnly, PrivateProfileOnly
from protocols.xmtp.facts import PROTOCOL
from protocols.xmtp.identity import AccountKey, InstallationBinding, InstallationKey
from protocols.xmtp.node_profile.inbox import Inbox

IDENTITY = "identity"
INBOX = "inbox"
GROUP = "group/"
KEY_PACKAGE = "kp/"

#: The leaf extension that carries a member's installation binding (a private-use type, RFC 9420 §17.3).
BINDING_EXTENSION = 0xF7B1


class StateKeyError(ConfigurationError):
    """The at-rest key for the XMTP client's state is missing, malformed or wrong."""


class StateKeyGone(StateKeyError):
    """A value was sealed under a version key that is no longer in the database's ``-erasable`` folder (the
    database was copied or restored without that folder, or the folder was lost)."""


SEALER = at_rest.Sealer(
    env_key="TESSERA_XMTP_STATE_KEY",
    env_key_file="TESSERA_XMTP_STATE_KEY_FILE",
    label=b"tessera/xmtp/state/",
    what="xmtp client state",
    missing=StateKeyError,
    invalid=StateKeyError,
    wrong=StateKeyError,
)


@attrs.frozen
class Identity:
    """Who this database is: an account, one installation of it, and the server it talks to.

    Attributes:
        account: the account's secp256k1 key.
        installation: this installation's Ed25519 key (the MLS signature key too).
        binding: the account's signed statement that the installation is its own.
        server: the delivery service's URL.
    """

    account: AccountKey = attrs.field(repr=False)
    installation: InstallationKey = attrs.field(repr=False)
    binding: InstallationBinding
    server: str

    @property
    def address(self) -> str:
        return self.account.address

    @property
    def installation_id(self) -> str:
        return self.installation.installation_id

    def mls_identity(self) -> mls.Identity:
        """Our MLS identity: the installation id as the credential, the installation key as signature key."""
        return mls.identity_with_key(self.installation_id, self.installation.to_bytes())

    def binding_extension(self) -> mls.messages.Extension:
        return mls.messages.Extension(BINDING_EXTENSION, self.binding.to_bytes())

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "account": self.account.to_bytes().hex(),
                "installation": self.installation.to_bytes().hex(),
                "binding": base64.b64encode(self.binding.to_bytes()).decode(),
                "server": self.server,
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Identity:
        fields = json.loads(data)
        return cls(
            AccountKey.from_bytes(bytes.fromhex(fields["account"])),
            InstallationKey.from_bytes(bytes.fromhex(fields["installation"])),
            InstallationBinding.from_bytes(base64.b64decode(fields["binding"])),
            fields["server"],
        )


class Vault:
    """Sealed reads and writes of the xmtp protocol state (the key is loaded on first use).

    ``opened`` keeps group states already opened and parsed (the database's own cache, on its
    :class:`~protocols.xmtp.connection.XmtpMember`); without one every read opens the state again.
    """

    def __init__(self, state: ProtocolState, opened: at_rest.OpenedCache | None = None):
        self.state = state
        self.opened = opened
        self._key: bytes | None = None

    @classmethod
    def of(cls, db: contract.Database) -> Vault:
        """The vault of ``db`` (outside handlers: inside a transaction the caller opened), uncached."""
        return cls(ProtocolState(db, PROTOCOL))

    @classmethod
    def in_context(cls, ctx: contract.Context) -> Vault:
        """The vault a handler or command reads through, with its database's cache of opened group states."""
        return cls(ctx.state, _opened_cache(ctx.runtime))

    @classmethod
    def of_runtime(cls, runtime: contract.Runtime) -> Vault:
        """The vault of ``runtime``'s database, with its cache of opened group states."""
        return cls(ProtocolState(runtime.db, PROTOCOL), _opened_cache(runtime))

    @property
    def key(self) -> bytes:
        if self._key is None:
            # Every payload's handler makes a Vault: the environment is read once per transaction, not per payload.
            memo = self.state.db.memo
            found = memo.get(_KEY_MEMO)
            if found is None:
                found = memo[_KEY_MEMO] = SEALER.load_key(self.state.db)
            self._key = found
        return self._key

    def get(self, name: str) -> bytes | None:
        sealed = self.state.get(name)
        return None if sealed is None else self._open(self.key, name, sealed)

    def _open(self, key: bytes, name: str, sealed: bytes) -> bytes:
        """Open a value sealed erasably (group states, KeyPackages) or with the key alone (the identity, and
        values stored before erasable sealing)."""
        try:
            return erasable.open_either(SEALER, self.state.db.path, key, name, sealed)
        except erasable.KeyGone as gone:
            raise StateKeyGone(
                f"{gone}: the database was copied or restored without its -erasable folder; a backup must hold "
                "both (docs/operations.md)"
            ) from None

    def _erasable(self, name: str, plain: bytes) -> bytes:
        """``plain`` sealed erasably as the next version of ``name`` (inside the write transaction): once the
        transaction that replaces or forgets it commits, no stored copy of it opens."""
        return erasable.seal(self.state.db, self.key, SEALER.label, name, plain, self.state.stored(name))

    def intent(self, name: str, value: bytes | None) -> WriteProtocolState:
        """Store ``value`` sealed under ``name`` (None deletes it)."""
        return WriteProtocolState(name, None if value is None else SEALER.seal(self.key, name, value))

    # --- identity ---------------------------------------------------------------------------

    def identity(self) -> Identity:
        """Our identity in Tessera's private profile (a ``ws://`` server)."""
        found = self.get(IDENTITY)
        if found is None:
            if self.has_inbox():
                raise PrivateProfileOnly(
                    f"this database speaks XMTP through the node {self.inbox().node}: this needs Tessera's "
                    "private profile (a database made with `identity new --server ws://...`); the node profile's "
                    "commands are listed in docs/xmtp.md, *The node profile*"
                )
            raise IdentityMissing(
                "this database has no XMTP identity: run `tessera xmtp identity new --node http://HOST:PORT`"
            )
        return Identity.from_bytes(found)

    def has_identity(self) -> bool:
        """Whether this database has an identity, in either profile."""
        return self.state.get(IDENTITY) is not None or self.has_inbox()

    def has_private_identity(self) -> bool:
        return self.state.get(IDENTITY) is not None

    # --- the node profile's inbox ---------------------------------------------------------------

    def inbox(self) -> Inbox:
        """Who we are in the node profile (:mod:`protocols.xmtp.node_profile`)."""
        found = self.get(INBOX)
        if found is None:
            if self.state.get(IDENTITY) is not None:
                server = Identity.from_bytes(self.get(IDENTITY) or b"{}").server
                raise NodeProfileOnly(
                    f"this database speaks Tessera's private profile over {server}, which no XMTP client can "
                    "reach; make a new database with `tessera xmtp identity new --node http://HOST:PORT` to "
                    "speak XMTP through a node"
                )
            raise IdentityMissing(
                "this database has no XMTP identity: run `tessera xmtp identity new --node http://HOST:PORT`"
            )
        return Inbox.from_bytes(found)

    def has_inbox(self) -> bool:
        return self.state.get(INBOX) is not None

    def inbox_intent(self, inbox: Inbox) -> WriteProtocolState:
        return self.intent(INBOX, inbox.to_bytes())

    def identity_intent(self, identity: Identity) -> WriteProtocolState:
        return self.intent(IDENTITY, identity.to_bytes())

    # --- groups -----------------------------------------------------------------------------

    @staticmethod
    def group_name(group_id: bytes) -> str:
        """The state name our engine state in ``group_id`` is kept under."""
        return GROUP + group_id.hex()

    def group(self, group_id: bytes) -> mls.GroupState:
        """Our engine state in ``group_id``; :class:`GroupUnknown` when we hold none."""
        name = self.group_name(group_id)
        staged = self.state.staged(name)
        if isinstance(staged, mls.GroupState):
            return staged
        sealed = self.state.get(name)
        if sealed is None:
            raise GroupUnknown(f"no group {group_id.hex()} on this database; `tessera xmtp groups` lists them")
        if self.opened is None:
            return mls.restore(self._open(self.key, name, sealed))
        return self.opened.open(self.key, name, sealed, mls.restore, opener=self._open)

    def has_group(self, group_id: bytes) -> bool:
        name = self.group_name(group_id)
        return self.state.staged(name) is not None or self.state.get(name) is not None

    def group_intent(self, group_id: bytes, state: mls.GroupState) -> StageProtocolState:
        """Our state in the group becomes ``state``: staged, so a transaction of many payloads of one group
        seals and writes it once, at COMMIT (and the ratchet secrets it consumed in between never reach
        the disk)."""
        name = self.group_name(group_id)
        return StageProtocolState(name, state, self._group_sealer(name))

    def stage_group(self, group_id: bytes, state: mls.GroupState, now_ms: int) -> None:
        """:meth:`group_intent` applied at once, outside a handler (inside the caller's write transaction)."""
        name = self.group_name(group_id)
        self.state.stage(name, state, self._group_sealer(name), now_ms)

    def hold_group(self, group_id: bytes, state: mls.GroupState, now_ms: int) -> None:
        """Keep ``state``, the group's state as stored, in memory for the rest of the write transaction: the
        group's handlers then read it from there instead of reading and opening the stored value each time,
        and nothing is written for it unless one of them stages another state (a page of a catch-up,
        :mod:`protocols.xmtp.ahead`)."""
        self.state.stage(self.group_name(group_id), state, _as_stored, now_ms)

    def _group_sealer(self, name: str) -> Callable[[mls.GroupState], bytes]:
        key = self.key

        def seal(value: mls.GroupState) -> bytes:
            sealed = self._erasable(name, mls.snapshot(value))
            if self.opened is not None:
                self.opened.remember(key, name, sealed, value)
            return sealed

        return seal

    # --- key packages -----------------------------------------------------------------------

    def key_package_refs(self) -> list[bytes]:
        """The KeyPackageRefs of our stock, read from the names alone (nothing is unsealed)."""
        return [bytes.fromhex(name[len(KEY_PACKAGE) :]) for name in self.state.keys(KEY_PACKAGE)]

    def key_package(self, ref: bytes) -> mls.KeyPackagePrivate | None:
        value = self.get(KEY_PACKAGE + ref.hex())
        return None if value is None else mls.key_package_private_from_bytes(value)

    def key_packages(self) -> dict[bytes, mls.KeyPackagePrivate]:
        """Our KeyPackages still in stock on the server, by KeyPackageRef."""
        found = {}
        for name in self.state.keys(KEY_PACKAGE):
            value = self.get(name)
            if value is not None:
                found[bytes.fromhex(name[len(KEY_PACKAGE) :])] = mls.key_package_private_from_bytes(value)
        return found

    def key_package_intent(
        self, private: mls.KeyPackagePrivate | None, ref: bytes
    ) -> StageProtocolState | WriteProtocolState:
        """Keep a KeyPackage's private keys, sealed erasably; None: it was used, so delete it and erase its
        version keys once the transaction commits."""
        name = KEY_PACKAGE + ref.hex()
        if private is None:
            erasable.forget(self.state.db, SEALER.label, name)
            return WriteProtocolState(name, None)
        return StageProtocolState(name, mls.key_package_private_to_bytes(private), partial(self._erasable, name))


def opened_cache() -> at_rest.OpenedCache:
    """A new cache of opened group states (one per database: its XmtpMember keeps it)."""
    return at_rest.OpenedCache(SEALER)


def _opened_cache(runtime: contract.Runtime) -> at_rest.OpenedCache:
    from protocols.xmtp.connection import XmtpMember  # the member is built on this module

    return runtime.service(XmtpMember).opened


_KEY_MEMO = "xmtp.state_key"


def _as_stored(_state: mls.GroupState) -> bytes:
    """The encoder of a state held as stored (:meth:`Vault.hold_group`): nothing to write (``UNCHANGED``)."""
    unchanged: bytes = UNCHANGED
    return unchanged
