"""The closed sets of Marmot states (MIP-03's vocabulary, and an invitation's), as ``StrEnum``s.

They compare equal to, and are stored as, their values; SQL binds a member as
a parameter rather than spelling its value (the tables' CHECK constraints
list the same values).
"""

from __future__ import annotations

import enum


class OuterState(enum.StrEnum):
    """Where a kind-445 outer event stands (``marmot_processed.state``)."""

    CREATED = "Created"  # our own, published but not yet seen on a relay
    PROCESSED = "Processed"
    PROCESSED_COMMIT = "ProcessedCommit"
    FAILED = "Failed"
    EPOCH_INVALIDATED = "EpochInvalidated"  # opened only by a commit branch that lost
    RETRYABLE = "Retryable"  # a rollback made it worth another try


class MessageState(enum.StrEnum):
    """Where a decrypted message stands (``marmot_messages.state``)."""

    CREATED = "Created"
    PROCESSED = "Processed"
    DELETED = "Deleted"
    EPOCH_INVALIDATED = "EpochInvalidated"


class WelcomeState(enum.StrEnum):
    """Where an invitation stands (``marmot_welcomes.state``)."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    DECLINED = "declined"
