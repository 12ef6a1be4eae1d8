"""A small real group for scenario tests: members run the engine, the Tessera app is the observer."""

from __future__ import annotations

import hashlib
import random
from typing import Any

from protocols.libraries import mls
from protocols.marmot.wire import group_data, key_package_events, nostr, outer, rumors

T0 = 1_700_000_000


class Net:
    """Members ``0..n-1`` (0 is the admin) plus an observer that the app joins as.

    ``states[i]`` is member i's engine state on the branch the test chose.
    """

    def __init__(
        self,
        members: int = 3,
        *,
        seed: int = 1,
        observer_admin: bool = False,
        relays: tuple[str, ...] = (),
        t0: int = T0,
    ):
        self.draw = random.Random(seed).randbytes
        self.gid_bytes = self.draw(32)
        self.gid = self.gid_bytes.hex()
        self.ngid = hashlib.sha256(b"nostr_group_id" + self.gid_bytes).hexdigest()  # no draw: seeds keep their streams
        self.ids = [mls.new_identity(self.draw(32).hex(), rng=self.draw) for _ in range(members)]
        self.observer = mls.new_identity(self.draw(32).hex(), rng=self.draw)
        admins = {self.ids[0].credential} | ({self.observer.credential} if observer_admin else set())
        creator = group_data.create_group(
            self.ids[0], self.gid_bytes, bytes.fromhex(self.ngid), admins=admins, relays=relays, now=t0, rng=self.draw
        )
        packages = [
            key_package_events.create_key_package(i, now=t0, rng=self.draw) for i in (*self.ids[1:], self.observer)
        ]
        result = mls.commit(creator, add=[kp for kp, _ in packages], rng=self.draw)
        self.states = {0: result.new_state}
        for n, (identity, (_, private)) in enumerate(zip(self.ids[1:], packages, strict=False), start=1):
            self.states[n] = mls.join_from_welcome(identity, private, result.welcomes[identity.credential])
        private = packages[-1][1]
        self.join_params = {
            "identity": mls.identity_to_bytes(self.observer).hex(),
            "key_package_private": mls.key_package_private_to_bytes(private).hex(),
            "welcome": result.welcomes[self.observer.credential].hex(),
        }

    def cred(self, i: int) -> str:
        return self.ids[i].credential

    @property
    def epoch(self) -> int:
        return self.states[0].epoch

    def wrap(self, state: mls.GroupState, message: bytes, at: int) -> bytes:
        return outer.to_bytes(outer.seal(state, message, self.ngid, at, rng=self.draw))

    def send(self, i: int, text: str, at: int, **options: Any) -> tuple[bytes, dict]:
        """Member i sends a rumor (``options`` as :meth:`send_on`'s: ``pubkey`` forges its author)."""
        line, rumor, self.states[i] = self.send_on(self.states[i], text, at, **{"pubkey": self.cred(i), **options})
        return line, rumor

    def send_on(
        self,
        state: mls.GroupState,
        text: str,
        at: int,
        *,
        kind: int = rumors.CHAT_KIND,
        tags=None,
        pubkey: str | None = None,
        payload: bytes | None = None,
    ) -> tuple[bytes, dict, mls.GroupState]:
        """Send from an explicit state (e.g. a losing branch); returns the new state too.

        ``pubkey`` forges the rumor's author (by default the state's own member) and ``payload``
        replaces the encoded rumor."""
        rumor = rumors.make(pubkey or mls.own_credential(state), at, text, kind=kind, tags=tags)
        message, new_state = mls.encrypt_application(state, payload or rumors.encode(rumor), rng=self.draw)
        return self.wrap(state, message, at), rumor, new_state

    def delete(self, i: int, target: str, at: int) -> tuple[bytes, dict]:
        return self.send(i, "", at, kind=rumors.DELETION_KIND, tags=[["e", target]])

    def prepare(self, i: int, at: int, **kwargs) -> tuple[bytes, mls.CommitResult]:
        """Member i creates a commit (self-update unless told otherwise) without anyone adopting it."""
        kwargs = kwargs or {"self_update": True}
        kwargs.setdefault("proposals_by_ref", ())  # pending proposals are committed only when a test names them
        result = mls.commit(self.states[i], rng=self.draw, **kwargs)
        return self.wrap(self.states[i], result.message, at), result

    def adopt(self, i: int, result: mls.CommitResult) -> None:
        """Everyone moves to the epoch of member i's commit (the committer from its own result)."""
        for n, state in list(self.states.items()):
            if n == i:
                continue
            self.states[n] = mls.process_message(state, result.message).new_state
        self.states[i] = result.new_state

    def commit(self, i: int, at: int, **kwargs) -> bytes:
        line, result = self.prepare(i, at, **kwargs)
        self.adopt(i, result)
        return line

    def propose(self, i: int, at: int, **kwargs) -> bytes:
        """Member i sends a proposal; the other members receive it at once (so their commits may include it)."""
        message, self.states[i] = mls.propose(self.states[i], rng=self.draw, **kwargs)
        for n, state in list(self.states.items()):
            if n != i:
                self.states[n] = mls.process_message(state, message).new_state
        return self.wrap(self.states[i], message, at)


def event_id(line: bytes) -> str:
    return nostr.parse_event(line)["id"]
