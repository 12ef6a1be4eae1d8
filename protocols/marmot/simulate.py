"""A seeded simulation of a real Marmot group, as a relay would deliver it.

Members run the real engine (:mod:`protocols.libraries.mls`): they send rumors, delete
some of their own, commit self-updates, adds and removes, and sometimes race
two commits for one epoch.  One member, the *observer*, never sends; the
relay stream starts at its join, and the files written for it let a Tessera
database join as that observer and ingest the stream.

The default delivery (``relay``) is plausible rather than orderly: messages
are swapped with their neighbours, some events are delivered twice, and
garbage is mixed in (lines that are not JSON, broken signatures, wrong
kinds, and valid kind-445 events nobody can decrypt).  The other orders are
what relays produce on catch-up: ``time`` (oldest first), ``reversed``
(newest first, as a ``REQ`` without ``until`` answers), ``paged`` (newest
page first, each page oldest first, as paging back with ``until`` gives) and
``shuffled``.  The plugin must end the same whatever the order.

Each race has a winner (the smaller ``(created_at, id)``) and a loser whose
committer sends a message or two on its own branch before it sees the
winner — sometimes a deletion, which must have no effect.  Whatever the
order, the losing commit ends ``Failed`` (``commit_lost_race``) and its
branch's messages ``EpochInvalidated``.

The expected outcome comes from the simulation's own ground truth (the
winning branch), never from running the plugin.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

import attrs

from core.errors import InvalidInput
from protocols.libraries import mls
from protocols.marmot import settings as marmot_settings
from protocols.marmot.cursor import Cursor, compare
from protocols.marmot.processing import rules
from protocols.marmot.processing.item import CLOCK_SKEW_S
from protocols.marmot.read.states import OuterState
from protocols.marmot.wire import envelope, group_data, key_package_events, nostr, outer, rumors

START = 1_700_000_000
MAX_EARLY = 1  # commits an event may arrive before the one that makes it readable
MAX_LATE = 2  # commits an event may arrive after; well inside the engine's 5 retained epochs


@attrs.frozen
class Config:
    members: int = 4
    messages: int = 100
    commits: int = 5
    races: int = 1
    garbage: int = 5
    duplicates: int = 5
    seed: int = 0
    swaps: float = 0.5  # adjacent swaps attempted per block
    race_shapes: tuple[str, ...] = ("loser_first", "winner_first")
    garbage_kinds: tuple[str, ...] = ("not_json", "bad_signature", "wrong_kind", "undecryptable")
    deletions: int = 0  # members deleting one of their own earlier messages
    order: str = "relay"  # relay | time | reversed | paged | shuffled
    page: int = 50  # events per page of the paged order
    start: int = START  # created_at of the first event (seconds); fixed by default so a seed gives the same stream


ORDERS = ("relay", "time", "reversed", "paged", "shuffled")


@attrs.define
class Member:
    name: str
    identity: mls.Identity = attrs.field(repr=False)
    state: mls.GroupState | None = attrs.field(default=None, repr=False)
    invited: mls.KeyPackagePrivate | None = attrs.field(default=None, repr=False)  # until its welcome

    @property
    def joined(self) -> mls.GroupState:
        """The state of a member in the group (the active ones and the observer)."""
        assert self.state is not None, f"{self.name} is not in the group"
        return self.state

    @property
    def pubkey(self) -> str:
        return self.identity.credential


@attrs.define
class Block:
    """Deliveries that move together; only single messages may move at all."""

    lines: list[bytes]
    kind: str  # message | commit | race
    shift: int = 0  # commits crossed: > 0 late, < 0 early


@attrs.frozen
class Simulation:
    """The relay stream, the observer's files, and what the observer must end with."""

    lines: list[bytes]
    identity: dict
    welcome: dict
    expected: dict

    @property
    def join_params(self) -> dict[str, str]:
        """The ``marmot.join`` command's parameters that make a database this simulation's observer."""
        return {
            "identity": self.identity["identity"],
            "key_package_private": self.identity["key_package_private"],
            "welcome": self.welcome["welcome"],
        }


class _Group:
    """Ground truth: the members' engine states on the winning branch."""

    def __init__(self, config: Config):
        self.config = config
        self.rng = random.Random(config.seed)
        self.draw: Callable[[int], bytes] = self.rng.randbytes
        self.now = config.start
        self.gid = self.draw(32)
        # Public and distinct from the private MLS group id; derived, so seeds keep their random streams.
        self.nostr_group_id = hashlib.sha256(b"nostr_group_id" + self.gid).digest()
        self.members: list[Member] = []
        self.blocks: list[Block] = []
        self.visible: list[tuple[Cursor, str]] = []  # (rumor cursor, rumor id) the observer must show
        self.authors: dict[str, str] = {}  # visible rumor id -> its author's pubkey
        self.invalidated: list[str] = []
        self.deleted: list[str] = []
        self.outer_states: dict[str, str] = {}  # outer id -> the processing state it must end in
        self.lost_commits: list[str] = []
        self.races: list[dict] = []
        self.commit_times: dict[int, int] = {}  # epoch -> created_at of the earliest commit made in it
        self.sent = 0
        self.observer = self._new_member("observer")
        self.welcome = b""
        self.observer_private: mls.KeyPackagePrivate | None = None
        self.join_epoch = 0  # the epoch the observer's welcome brings it into (set by setup)

    # --- setup ----------------------------------------------------------------------

    def _new_member(self, name: str) -> Member:
        return Member(name, mls.new_identity(self.draw(32).hex(), rng=self.draw))

    def setup(self) -> None:
        creator = self._new_member("m0")
        creator.state = group_data.create_group(
            creator.identity, self.gid, self.nostr_group_id, now=self.now, rng=self.draw
        )
        others = [self._new_member(f"m{i}") for i in range(1, self.config.members)]
        packages = [
            key_package_events.create_key_package(m.identity, now=self.now, rng=self.draw)
            for m in (*others, self.observer)
        ]
        result = mls.commit(creator.state, add=[kp for kp, _ in packages], rng=self.draw)
        creator.state = result.new_state
        for member, (_kp, private) in zip((*others, self.observer), packages, strict=False):
            member.state = mls.join_from_welcome(member.identity, private, result.welcomes[member.pubkey])
        self.welcome = result.welcomes[self.observer.pubkey]
        self.join_epoch = self.observer.joined.epoch
        self.observer_private = packages[-1][1]
        self.members = [creator, *others]

    # --- time and wrapping -----------------------------------------------------------

    def tick(self) -> int:
        self.now += self.rng.choice((0, 0, 1, 1, 2))
        return self.now

    def wrap(self, state: mls.GroupState, message: bytes, created_at: int) -> bytes:
        return outer.to_bytes(outer.seal(state, message, self.nostr_group_id.hex(), created_at, rng=self.draw))

    def active(self) -> list[Member]:
        return [m for m in self.members if m.state is not None]

    # --- messages -------------------------------------------------------------------------

    def message(self, sender: Member, created_at: int, *, delete: str | None = None) -> tuple[bytes, dict]:
        self.sent += 1
        if delete is None:
            rumor = rumors.make(sender.pubkey, created_at, f"message {self.sent} from {sender.name}")
        else:
            rumor = rumors.make(sender.pubkey, created_at, "", kind=rumors.DELETION_KIND, tags=[["e", delete]])
        ciphertext, sender.state = mls.encrypt_application(sender.joined, rumors.encode(rumor), rng=self.draw)
        return self.wrap(sender.state, ciphertext, created_at), rumor

    def send_visible(self) -> None:
        created_at = self.tick()
        sender = self.rng.choice(self.active())
        line, rumor = self.message(sender, created_at)
        self._shown(line, rumor, created_at)
        self.blocks.append(Block([line], "message"))

    def _shown(self, line: bytes, rumor: dict, created_at: int) -> None:
        self.visible.append((Cursor(created_at, rumor["id"]), rumor["id"]))
        self.authors[rumor["id"]] = rumor["pubkey"]
        self.outer_states[_outer_id(line)] = OuterState.PROCESSED

    def own_visible(self, member: Member) -> list[str]:
        """Visible, not yet deleted rumors ``member`` wrote."""
        return [r for r, author in self.authors.items() if author == member.pubkey and r not in self.deleted]

    def delete_visible(self) -> None:
        """A member deletes one of its own earlier messages (a no-op slot when nobody can)."""
        authors = [m for m in self.active() if self.own_visible(m)]
        if not authors:
            return
        sender = self.rng.choice(authors)
        target = self.rng.choice(self.own_visible(sender))
        line, _ = self.message(sender, self.tick(), delete=target)
        self.deleted.append(target)
        self.outer_states[_outer_id(line)] = OuterState.PROCESSED
        self.blocks.append(Block([line], "message"))

    # --- commits ------------------------------------------------------------------------

    def commit(self) -> None:
        committer, kwargs = self._commit_plan()
        created_at = self.tick()
        self.commit_times[committer.joined.epoch] = created_at
        result = mls.commit(committer.joined, rng=self.draw, **kwargs)
        line = self.wrap(committer.joined, result.message, created_at)
        self._adopt(committer, result, result.message)
        self.outer_states[_outer_id(line)] = OuterState.PROCESSED_COMMIT
        self.blocks.append(Block([line], "commit"))

    def _commit_plan(self) -> tuple[Member, dict]:
        admin = self.members[0]
        roll = self.rng.random()
        if roll < 0.15 and len(self.active()) < self.config.members + 3:
            joiner = self._new_member(f"m{len(self.members)}")
            package, joiner.invited = key_package_events.create_key_package(
                joiner.identity, now=self.now, rng=self.draw
            )
            self.members.append(joiner)
            return admin, {"add": [package]}
        removable = self.active()[1:]
        if roll < 0.25 and len(removable) > 2:
            return admin, {"remove": [self.rng.choice(removable).pubkey]}
        return self.rng.choice(self.active()), {"self_update": True}

    def _adopt(self, committer: Member, result: mls.CommitResult, message: bytes) -> None:
        """Everyone but the committer processes the commit; joiners join; the removed leave."""
        for member in [*self.active(), self.observer]:
            if member is not committer:
                member.state = rules.process_message(member.joined, message).new_state
        committer.state = result.new_state
        for member in self.members:
            if member.pubkey in result.welcomes:
                assert member.invited is not None, "a welcome answers the key package the member was invited with"
                member.state = mls.join_from_welcome(member.identity, member.invited, result.welcomes[member.pubkey])
                member.invited = None
            elif member.state is not None and not member.state.active:
                member.state = None  # removed: sends nothing more

    # --- races -----------------------------------------------------------------------------

    def race(self) -> None:
        first, second = self.rng.sample(self.active(), 2)
        base = self.tick()
        times = (base, base + self.rng.choice((0, 1)))
        results = [mls.commit(m.joined, self_update=True, rng=self.draw) for m in (first, second)]
        lines = [self.wrap(m.joined, r.message, t) for m, r, t in zip((first, second), results, times, strict=False)]
        events = [nostr.parse_event(line) for line in lines]
        cursors = [Cursor(e["created_at"], e["id"]) for e in events]
        w = 0 if compare(cursors[0], cursors[1]) < 0 else 1
        winner, loser = (first, second)[w], (first, second)[1 - w]
        scenario = self.rng.choice(self.config.race_shapes)
        epoch = first.joined.epoch  # the epoch both commits compete for
        self.commit_times[epoch] = min(times)
        loser_lines = self._loser_branch(loser, results[1 - w], max(times))
        winner_lines = self._settle_race(winner, loser, results[w], results[1 - w], scenario)
        self._deliver_race(scenario, lines[w], lines[1 - w], loser_lines, winner_lines)
        self.outer_states[cursors[w].id] = OuterState.PROCESSED_COMMIT
        self.outer_states[cursors[1 - w].id] = OuterState.FAILED
        self.lost_commits.append(cursors[1 - w].id)
        self.races.append({"epoch": epoch, "scenario": scenario, "winner": cursors[w].id, "loser": cursors[1 - w].id})

    def _loser_branch(self, loser: Member, result: mls.CommitResult, after: int) -> list[tuple[bytes, str]]:
        """Messages the losing committer sends on its own branch before it sees the winner.

        With deletions on, the first may delete one of its own visible messages: the deletion
        is on the losing branch, so the message must stay.
        """
        branch = Member(loser.name, loser.identity, result.new_state)
        out = []
        for n in range(self.rng.randint(1, 2)):
            self.now = max(self.now, after)
            own = self.own_visible(loser)
            target = self.rng.choice(own) if n == 0 and own and self.config.deletions else None
            line, rumor = self.message(branch, self.tick(), delete=target)
            self.outer_states[_outer_id(line)] = OuterState.EPOCH_INVALIDATED
            out.append((line, rumor["id"]) if target is None else (line, ""))
        return out

    def _settle_race(
        self, winner: Member, loser: Member, won: mls.CommitResult, lost: mls.CommitResult, scenario: str
    ) -> list[bytes]:
        """Everyone adopts the winner (the loser from its pending state); maybe one early winner message."""
        loser.state = lost.pending_state
        self._adopt(winner, won, won.message)
        if scenario != "loser_first" or self.rng.random() < 0.5:
            return []
        created_at = self.tick()
        line, rumor = self.message(self.rng.choice(self.active()), created_at)
        self._shown(line, rumor, created_at)
        return [line]

    def _deliver_race(
        self, scenario: str, won: bytes, lost: bytes, loser_lines: list[tuple[bytes, str]], winner_lines: list[bytes]
    ) -> None:
        branch = [line for line, _ in loser_lines]
        if scenario == "loser_first":
            self.blocks.append(Block([lost, *branch, *winner_lines, won], "race"))
        else:
            self.blocks.append(Block([won, lost, *branch], "race"))
        # Decrypted on the losing branch either way: before the rollback or after the winner.
        self.invalidated += [rumor_id for _, rumor_id in loser_lines if rumor_id]

    # --- the script -----------------------------------------------------------------------

    def run(self) -> None:
        self.setup()
        slots = ["message"] * self.config.messages + ["commit"] * (self.config.commits - self.config.races)
        slots += ["race"] * self.config.races + ["delete"] * self.config.deletions
        self.rng.shuffle(slots)
        for slot in slots:
            {"message": self.send_visible, "commit": self.commit, "race": self.race, "delete": self.delete_visible}[
                slot
            ]()


# --- delivery ---------------------------------------------------------------------------------


def _reorder(blocks: list[Block], rng: random.Random, attempts: int) -> None:
    """Adjacent swaps, keeping races intact and each message within its lateness bounds."""
    for _ in range(attempts):
        if len(blocks) < 2:
            return
        i = rng.randrange(len(blocks) - 1)
        a, b = blocks[i], blocks[i + 1]
        if a.kind == "message" and b.kind == "message":
            blocks[i], blocks[i + 1] = b, a
        elif a.kind == "message" and b.kind == "commit" and a.shift < MAX_LATE:
            a.shift += 1
            blocks[i], blocks[i + 1] = b, a
        elif a.kind == "commit" and b.kind == "message" and b.shift > -MAX_EARLY:
            b.shift -= 1
            blocks[i], blocks[i + 1] = b, a


def _duplicate(lines: list[bytes], rng: random.Random, count: int) -> list[bytes]:
    """Re-deliver ``count`` lines, each somewhere after its first delivery."""
    out = list(lines)
    for _ in range(count if lines else 0):
        source = rng.randrange(len(out))
        out.insert(rng.randint(source + 1, len(out)), out[source])
    return out


def _garbage(group: _Group, valid: list[bytes], count: int) -> list[tuple[bytes, bool]]:
    """``(line, never readable: no key ever opens it, so it waits or is dropped)`` for each piece of garbage."""
    rng, draw, out = group.rng, group.draw, []
    for n in range(count):
        kind = rng.choice(group.config.garbage_kinds)
        created_at = rng.randint(group.config.start, max(group.now, group.config.start))
        if kind == "not_json":
            out.append((b"{not json " + draw(6).hex().encode(), False))
        elif kind == "bad_signature" and valid:
            event = nostr.parse_event(rng.choice(valid))
            event["sig"] = ("0" if event["sig"][0] != "0" else "1") + event["sig"][1:]
            out.append((outer.to_bytes(event), False))
        elif kind == "wrong_kind":
            event = nostr.sign_event(
                {
                    "created_at": created_at,
                    "kind": 1,
                    "tags": [["h", group.nostr_group_id.hex()]],
                    "content": f"noise {n}",
                },
                _key(draw),
                aux_rand=draw(32),
            )
            out.append((outer.to_bytes(event), False))
        else:
            content = envelope.seal(draw(32), draw(200), nonce=draw(32)[: envelope.NONCE_SIZE])
            event, _ = nostr.make_group_event(
                content,
                group.nostr_group_id.hex(),
                created_at,
                secret_key=_key(draw),
                extra_tags=[envelope.ENCODING_TAG],
                aux_rand=draw(32),
            )
            out.append((outer.to_bytes(event), True))
    return out


def _readable_since(group: _Group) -> int | None:
    """What :func:`protocols.marmot.processing.item.readable_since` says once the observer has every commit:
    garbage dated earlier is dropped, the rest waits."""
    joined = group.join_epoch
    epochs = sorted(e for e in group.commit_times if e >= joined)[-marmot_settings.MarmotSettings.of().snapshots :]
    return group.commit_times[epochs[0]] - CLOCK_SKEW_S if epochs else None


def _key(draw: Callable[[int], bytes]) -> bytes:
    return hashlib.sha256(draw(32)).digest()


def _mix(lines: list[bytes], garbage: list[tuple[bytes, bool]], rng: random.Random) -> list[bytes]:
    out = list(lines)
    for line, _ in garbage:
        out.insert(rng.randint(0, len(out)), line)
    return out


def _outer_id(line: bytes) -> str:
    return nostr.parse_event(line)["id"]


def arrange(lines: list[bytes], order: str, rng: random.Random, *, page: int = 50) -> list[bytes]:
    """``lines`` (the relay order) rearranged as another kind of delivery would produce them.

    Lines that are not events keep their relative place among the valid ones.
    """
    if order == "relay":
        return list(lines)
    keyed = [(_time_key(line), n, line) for n, line in enumerate(lines)]
    by_time = [line for _, _, line in sorted(keyed)]
    if order == "time":
        return by_time
    if order == "reversed":
        return by_time[::-1]
    if order == "paged":
        pages = [by_time[i : i + page] for i in range(0, len(by_time), page)]
        return [line for chunk in reversed(pages) for line in chunk]
    if order == "shuffled":
        shuffled = list(lines)
        rng.shuffle(shuffled)
        return shuffled
    raise InvalidInput(f"unknown delivery order {order!r}; one of {', '.join(ORDERS)}")


def _time_key(line: bytes) -> tuple[int, str]:
    try:
        event = nostr.parse_event(line)
    except Exception:
        return (-1, line.hex())
    return (event["created_at"], event["id"])


def simulate(config: Config) -> Simulation:
    """Run the group and build the delivered stream plus the observer's expected outcome."""
    if config.order not in ORDERS:
        raise InvalidInput(f"unknown delivery order {config.order!r}; one of {', '.join(ORDERS)}")
    group = _Group(config)
    group.run()
    _reorder(group.blocks, group.rng, int(len(group.blocks) * config.swaps))
    lines = [line for block in group.blocks for line in block.lines]
    garbage = _garbage(group, lines, config.garbage)
    never = [line for line, never_readable in garbage if never_readable]
    since = _readable_since(group)
    waiting = sum(1 for line in never if since is None or nostr.parse_event(line)["created_at"] >= since)
    lines = _mix(_duplicate(lines, group.rng, config.duplicates), garbage, group.rng)
    lines = arrange(lines, config.order, group.rng, page=config.page)
    expected = {
        "group": group.gid.hex(),
        "nostr_group_id": group.nostr_group_id.hex(),
        "final_epoch": group.observer.joined.epoch,
        "rumor_ids": [rumor_id for _, rumor_id in sorted(group.visible, key=lambda v: v[0].key())],
        "invalidated_ids": group.invalidated,
        "deleted_ids": sorted(group.deleted),
        "lost_commits": group.lost_commits,
        "failed": len(group.lost_commits),
        "waiting": waiting,
        "dropped": len(never) - waiting,
        "outer_states": group.outer_states,
        "races": group.races,
        "lines": len(lines),
    }
    assert group.observer_private is not None, "setup() invited the observer"
    identity = {
        "pubkey": group.observer.pubkey,
        "identity": mls.identity_to_bytes(group.observer.identity).hex(),
        "key_package_private": mls.key_package_private_to_bytes(group.observer_private).hex(),
    }
    welcome = {"group": group.gid.hex(), "welcome": group.welcome.hex()}
    return Simulation(lines, identity, welcome, expected)
