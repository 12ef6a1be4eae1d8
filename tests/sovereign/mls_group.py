"""Real MLS traffic for the store's tests: members of one group made with the engine, producing the bytes
clients would send (application messages, commits, proposals, welcomes, KeyPackages)."""

from __future__ import annotations

import os

from protocols.libraries import mls


class Member:
    """One installation: its identity (the MLS signature key is the installation key) and its group state."""

    def __init__(self) -> None:
        self.identity = mls.new_identity(os.urandom(16).hex())
        self.installation = self.identity.signature.public.hex()
        self.state: mls.GroupState | None = None

    def key_package(self, *, now: int | None = None) -> tuple[bytes, mls.KeyPackagePrivate]:
        key_package, private = mls.create_key_package(self.identity, now=now)
        return mls.key_package_to_bytes(key_package), private


class Group:
    """A group whose creator is ``members[0]``; the others join from welcomes as they are added."""

    def __init__(self, size: int = 1):
        self.group_id = os.urandom(16)
        self.members = [Member() for _ in range(size)]
        creator = self.members[0]
        creator.state = mls.create_group(creator.identity, self.group_id)
        self.welcomes: dict[str, bytes] = {}
        for member in self.members[1:]:
            self.add(member)

    @property
    def gid(self) -> str:
        return self.group_id.hex()

    @property
    def creator(self) -> Member:
        return self.members[0]

    def add(self, member: Member) -> bytes:
        """The creator adds ``member`` (merged at once, everyone else follows); returns the commit bytes."""
        key_package, private = member.key_package()
        result = mls.commit(self._state(self.creator), add=[key_package])
        self._merge_everywhere(result)
        self.welcomes[member.installation] = result.welcomes[member.identity.credential]
        member.state = mls.join_from_welcome(member.identity, private, self.welcomes[member.installation])
        if member not in self.members:
            self.members.append(member)
        return result.message

    def application(self, member: Member, text: str = "hello") -> bytes:
        message, member.state = mls.encrypt_application(self._state(member), text.encode())
        return message

    def commit(self, member: Member | None = None) -> bytes:
        """A self-update commit by ``member`` (default the creator), applied by everyone."""
        committer = member or self.creator
        result = mls.commit(self._state(committer), self_update=True)
        self._merge_everywhere(result, committer)
        return result.message

    def stale_commit(self, member: Member) -> bytes:
        """A commit ``member`` makes for the current epoch but never applies (it lost the race)."""
        return mls.commit(self._state(member), self_update=True).message

    def proposal(self, member: Member) -> bytes:
        message, member.state = mls.propose(self._state(member), self_remove=True)
        return message

    def _merge_everywhere(self, result: mls.CommitResult, committer: Member | None = None) -> None:
        committer = committer or self.creator
        for other in self.members:
            if other.state is None:
                continue
            if other is committer:
                other.state = result.new_state
            else:
                other.state = mls.process_message(other.state, result.message).new_state

    @staticmethod
    def _state(member: Member) -> mls.GroupState:
        assert member.state is not None, "not in the group"
        return member.state
