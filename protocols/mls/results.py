"""Values returned by engine operations.

Every result that changes state carries ``new_state``; the caller decides
whether (and when) to persist it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

from .framing import MessageHeader
from .state import GroupState

ProposalKind = Literal["add", "remove", "self_remove", "other"]


@attrs.frozen
class CommitResult:
    """Output of ``commit``.

    ``message``: the commit to publish.  ``welcomes``: credential -> Welcome
    for every added member.  ``new_state``: our state at epoch + 1, to adopt
    once the commit is known to have won.  ``pending_state``: our state at the
    CURRENT epoch with the commit's handshake key consumed and the commit
    remembered; persist it while the commit is in flight.  Processing our own
    commit with it yields ``CommitApplied`` whose ``new_state == new_state``;
    processing a competing commit with it works as with any state.
    """

    message: bytes
    welcomes: Mapping[str, bytes]
    new_state: GroupState = attrs.field(repr=False)
    pending_state: GroupState = attrs.field(repr=False)


@attrs.frozen
class ApplicationReceived:
    sender_credential: str
    plaintext: bytes
    epoch: int
    generation: int
    new_state: GroupState = attrs.field(repr=False)


@attrs.frozen
class CommitApplied:
    """A commit was applied (or it removed us: ``we_were_removed``).

    When we were removed, ``new_state`` is our old state marked inactive: it
    can still decrypt late messages of the epochs it knew, nothing else.
    """

    committer_credential: str
    new_epoch: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    updated: tuple[str, ...]
    we_were_removed: bool
    admins: frozenset[str]
    new_state: GroupState = attrs.field(repr=False)


@attrs.frozen
class ProposalReceived:
    """A proposal from another member, now pending in ``new_state`` (add/remove/self_remove).

    ``subject_credential`` is who would be added or removed.
    """

    kind: ProposalKind
    proposer_credential: str
    proposal_ref: bytes
    subject_credential: str | None
    epoch: int
    new_state: GroupState = attrs.field(repr=False)


ProcessResult = ApplicationReceived | CommitApplied | ProposalReceived

__all__ = [
    "ApplicationReceived",
    "CommitApplied",
    "CommitResult",
    "MessageHeader",
    "ProcessResult",
    "ProposalKind",
    "ProposalReceived",
]
