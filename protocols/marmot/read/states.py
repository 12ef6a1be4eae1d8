"""The two closed sets of Marmot states (MIP-03's vocabulary), as ``StrEnum``s.

They compare equal to, and are stored as, their names; SQL that mentions a
state spells the same name.
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
