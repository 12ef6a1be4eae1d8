"""The one error of the XMTP identity library: input refused, with a machine reason and the gRPC status to answer."""

from __future__ import annotations

from typing import Literal

from core.errors import InvalidInput

#: The gRPC status names a node answers a refusal with.
Status = Literal["INVALID_ARGUMENT", "FAILED_PRECONDITION", "ALREADY_EXISTS", "UNIMPLEMENTED", "RESOURCE_EXHAUSTED"]


class Refused(InvalidInput):
    """A key package, identity update, group message or welcome that must not be stored.

    Attributes:
        reason: a short machine code (``bad_signature``, ``wrong_sequence``, ``not_mls``, ``too_large`` ...).
        status: the gRPC status name a node answers with (``INVALID_ARGUMENT`` unless the input is
            well formed but does not fit the stored state, or asks for something this node cannot do).
    """

    def __init__(self, message: str, *, reason: str, status: Status = "INVALID_ARGUMENT"):
        super().__init__(message)
        self.reason = reason
        self.status = status

    def __repr__(self) -> str:
        return f"Refused({str(self)!r}, reason={self.reason!r}, status={self.status!r})"
