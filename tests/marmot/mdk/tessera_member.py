"""A Tessera member of a Marmot group, driven directly through the MLS engine and the wire modules.

It is the reference for what the plugin does with one group, without the
event log: the same steps in the same order, small enough to read whole.

* Sending: the inner rumor (pubkey = our credential) -> an MLS application
  message -> the kind-445 envelope of the current epoch (:mod:`~protocols.marmot.wire.outer`).
* Receiving: the envelope is opened with the key of every retained epoch,
  the MLS message processed with Marmot's admin rule, and a rumor is only
  accepted when its pubkey is the credential MLS authenticated.
* Committing: :meth:`TesseraMember.commit` returns the event to publish and
  leaves the commit pending; it takes effect when its echo is received (or
  :meth:`TesseraMember.merge`), so a competing commit may still win.
* Racing commits (seed 001, MIP-03): a commit for an epoch we already left
  competes with the one we applied; the earliest ``created_at``, then the
  smallest event id, wins.  A winner rolls the group back to the state
  before that epoch's commit and is applied to it; the rumors read with the
  loser's keys leave the history.
"""

from __future__ import annotations

import os
import time
from typing import Literal

import attrs

from protocols.libraries import mls
from protocols.marmot.errors import MarmotError
from protocols.marmot.processing import rules
from protocols.marmot.wire import group_data, key_package_events, nostr, outer, rumors
from protocols.marmot.wire.key_package_events import key_package_event, parse_key_package_event
from protocols.marmot.wire.welcome_events import parse_welcome_rumor, welcome_rumor

ROLLBACK_EPOCHS = 5
"""How many epochs back a better commit can still win (MDK 0.8.0 keeps 5 snapshots by default)."""

Outcome = Literal["message", "own", "commit", "proposal", "rewrapped", "lost_race", "rolled_back"]


class UnreadableEvent(MarmotError, ValueError):
    """A kind-445 event that is not for this group, or that no retained epoch key opens."""


class ForgedRumor(MarmotError, ValueError):
    """An application message whose rumor names another author than the member MLS authenticated."""


@attrs.frozen
class HistoryEntry:
    """One rumor as a member saw it, and the epoch whose keys it was read with."""

    rumor_id: str
    kind: int
    content: str
    author: str
    created_at: int
    epoch: int


@attrs.frozen
class Received:
    """What one event did: ``rumor`` for a message, ``proposal`` for a proposal, ``commit`` when one was applied."""

    outcome: Outcome
    epoch: int
    rumor: dict | None = None
    proposal: mls.ProposalReceived | None = None
    commit: mls.CommitApplied | None = None


@attrs.frozen
class Outgoing:
    """A commit to publish, and the welcome rumor for each member it adds (by pubkey)."""

    event: dict
    welcome_rumors: dict[str, dict]


@attrs.frozen
class _AppliedCommit:
    """How an epoch was left: the state before its commit, and the rank of the commit applied to it."""

    before: mls.GroupState = attrs.field(repr=False)
    rank: tuple[int, str]
    digest: bytes


def rank(event: dict) -> tuple[int, str]:
    """MIP-03's order of competing commits, smallest first: earliest created_at, then smallest event id."""
    return event["created_at"], event["id"]


class TesseraMember:
    """One Tessera client: a Nostr key, its MLS identity, and (after creating or joining) one group.

    Attributes:
        name: a label for messages.
        relays: the relays its KeyPackages and groups name.
        secret_key, pubkey: the Nostr key pair (pubkey as hex).
        identity: the MLS identity whose credential is ``pubkey``.
        state: the group state (None before creating or joining).
    """

    def __init__(self, name: str, *, relays: tuple[str, ...]):
        self.name = name
        self.relays = relays
        self.secret_key = nostr.generate_secret_key()
        self.pubkey = nostr.public_key_xonly(self.secret_key).hex()
        self.identity = mls.new_identity(self.pubkey)
        self.state: mls.GroupState | None = None
        self._history: list[HistoryEntry] = []
        self._key_packages: dict[str, mls.KeyPackagePrivate] = {}
        self._own_events: set[str] = set()
        self._applied: dict[int, _AppliedCommit] = {}
        self._pending: dict | None = None

    def __repr__(self) -> str:
        return f"TesseraMember({self.name}, {self.pubkey[:12]})"

    # --- the group ------------------------------------------------------------------------

    @property
    def group(self) -> mls.GroupState:
        """The group state; raises :class:`~protocols.libraries.mls.InvalidArgument` before creating or joining one."""
        if self.state is None:
            raise mls.InvalidArgument(f"{self.name} has neither created nor joined a group")
        return self.state

    @property
    def epoch(self) -> int:
        return self.group.epoch

    @property
    def nostr_group_id(self) -> str:
        return group_data.nostr_group_id(self.group)

    @property
    def members(self) -> set[str]:
        return set(mls.member_credentials(self.group).values())

    @property
    def history(self) -> list[HistoryEntry]:
        """The rumors seen, in the order seen (those read with a losing commit's keys left out)."""
        return list(self._history)

    def exporter(self) -> bytes:
        """The current epoch's group-event key, the same for every member of the epoch."""
        return mls.exporter_secret(self.group)

    def key_package_event(self) -> dict:
        """A fresh KeyPackage as a signed kind-30443 event; its private part is kept to join with."""
        key_package, private = key_package_events.create_key_package(self.identity)
        unsigned = key_package_event(key_package, self.relays, created_at=int(time.time()))
        event = nostr.sign_event(unsigned, self.secret_key)
        self._key_packages[event["id"]] = private
        return event

    def create_group(
        self, *, name: str = "tessera", admins: tuple[str, ...] | None = None, require_self_remove: bool = True
    ) -> None:
        """Create a Marmot group of one; the admins default to us."""
        self.state = group_data.create_group(
            self.identity,
            os.urandom(32),
            os.urandom(32),
            admins=admins,
            name=name,
            relays=self.relays,
            require_self_remove=require_self_remove,
        )

    def join(self, rumor: dict) -> None:
        """Join from a kind-444 welcome rumor (already unwrapped) inviting one of our KeyPackage events."""
        welcome = parse_welcome_rumor(rumor)
        private = self._key_packages.pop(welcome.key_package_event_id, None)
        if private is None:
            raise mls.InvalidArgument(f"{self.name} published no KeyPackage event {welcome.key_package_event_id}")
        self.state = mls.join_from_welcome(self.identity, private, welcome.welcome)

    # --- sending --------------------------------------------------------------------------

    def send(self, content: str, *, kind: int = rumors.CHAT_KIND, tags: list[list[str]] | None = None) -> dict:
        """A rumor by us as a kind-445 event of the current epoch; it enters our history at once."""
        rumor = rumors.make(self.pubkey, int(time.time()), content, kind=kind, tags=tags)
        message, self.state = mls.encrypt_application(self.group, rumors.encode(rumor))
        self._remember(rumor, self.epoch)
        return self._seal(message)

    def leave(self) -> dict:
        """A proposal to remove ourselves, for an admin to commit (RFC 9420 Remove with us as sender)."""
        message, self.state = mls.propose(self.group, self_remove=True)
        return self._seal(message)

    def commit(
        self,
        *,
        add: tuple[dict, ...] = (),
        remove: tuple[str, ...] = (),
        self_update: bool = False,
        proposals_by_ref: list[bytes] | None = None,
        admins: tuple[str, ...] | None = None,
        created_at: int | None = None,
    ) -> Outgoing:
        """A commit as the kind-445 event to publish; it stays pending until its echo (or :meth:`merge`).

        ``add`` takes signed KeyPackage events; ``admins`` replaces the admin set.
        """
        now = int(time.time())
        invitees = {parsed.author: parsed for parsed in (parse_key_package_event(e, now=now) for e in add)}
        result = mls.commit(
            self.group,
            add=[parsed.key_package for parsed in invitees.values()],
            remove=remove,
            self_update=self_update,
            proposals_by_ref=proposals_by_ref,
            extensions=None if admins is None else group_data.with_admins(self.group, admins),
        )
        self.state = result.pending_state
        self._pending = self._seal(result.message, created_at=created_at)
        welcomes = {
            pubkey: welcome_rumor(
                result.welcomes[pubkey],
                sender_pubkey=self.pubkey,
                key_package_event_id=parsed.event_id,
                relays=self.relays,
                created_at=now,
            )
            for pubkey, parsed in invitees.items()
        }
        return Outgoing(self._pending, welcomes)

    def merge(self) -> Received:
        """Receive our last commit's event, as its echo from a relay would arrive."""
        if self._pending is None:
            raise mls.InvalidArgument(f"{self.name} has no commit to merge")
        return self.receive(self._pending)

    def _seal(self, message: bytes, *, created_at: int | None = None) -> dict:
        event = outer.seal(self.group, message, self.nostr_group_id, created_at or int(time.time()))
        self._own_events.add(event["id"])
        return event

    # --- receiving ------------------------------------------------------------------------

    def receive(self, event: dict) -> Received:
        """Process one kind-445 event of the group; what it refuses raises and changes nothing."""
        nostr.verify_event(event)
        if nostr.group_id_of(event) != self.nostr_group_id:
            raise UnreadableEvent(f"the event's h tag does not name {self.name}'s group")
        opened = outer.open_content(self.group, event["content"])
        if opened is None:
            raise UnreadableEvent("no key of a retained epoch opens the event")
        epoch, message = opened
        header = mls.peek(message)
        if header.content_type == "commit":
            return self._commit(event, message, header.epoch)
        if event["id"] in self._own_events:
            return Received("own", epoch)  # its key is spent; the rumor was recorded when sent
        result = rules.process_message(self.group, message)
        if isinstance(result, mls.ProposalReceived):
            self.state = result.new_state
            return Received("proposal", result.epoch, proposal=result)
        if not isinstance(result, mls.ApplicationReceived):
            raise mls.InvalidMessage(f"a {header.content_type} message processed as a commit")
        rumor = rumors.decode(result.plaintext)
        if rumor["pubkey"] != result.sender_credential:
            raise ForgedRumor(f"a rumor by {rumor['pubkey'][:12]} sent by member {result.sender_credential[:12]}")
        self.state = result.new_state
        self._remember(rumor, result.epoch)
        return Received("message", result.epoch, rumor=rumor)

    def _commit(self, event: dict, message: bytes, epoch: int) -> Received:
        digest = self.group.suite.hash(message)
        if epoch == self.epoch:
            applied = self._apply(self.group, event, message, digest)
            return Received("commit", epoch, commit=applied)
        incumbent = self._applied.get(epoch)
        if incumbent is None:
            raise mls.WrongEpoch(epoch, self.epoch, f"only commits of the last {ROLLBACK_EPOCHS} epochs can compete")
        if digest == incumbent.digest:  # the same commit in another wrapper: only its rank can improve
            self._applied[epoch] = attrs.evolve(incumbent, rank=min(incumbent.rank, rank(event)))
            return Received("rewrapped", epoch)
        if rank(event) > incumbent.rank:
            return Received("lost_race", epoch)
        self._applied = {e: a for e, a in self._applied.items() if e < epoch}
        self._history = [entry for entry in self._history if entry.epoch <= epoch]
        applied = self._apply(incumbent.before, event, message, digest)
        return Received("rolled_back", epoch, commit=applied)

    def _apply(self, before: mls.GroupState, event: dict, message: bytes, digest: bytes) -> mls.CommitApplied:
        """Apply a commit to ``before`` and keep ``before`` so that a better commit can replace it."""
        result = rules.process_message(before, message)
        if not isinstance(result, mls.CommitApplied):
            raise mls.InvalidMessage("a commit header over content that is not a commit")
        self._applied[before.epoch] = _AppliedCommit(before, rank(event), digest)
        self._applied.pop(before.epoch - ROLLBACK_EPOCHS, None)
        self.state = result.new_state
        return result

    def _remember(self, rumor: dict, epoch: int) -> None:
        entry = HistoryEntry(rumor["id"], rumor["kind"], rumor["content"], rumor["pubkey"], rumor["created_at"], epoch)
        self._history.append(entry)
