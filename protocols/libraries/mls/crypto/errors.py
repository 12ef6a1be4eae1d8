"""Errors of the RFC 9420 crypto layer.

Both refine :class:`~protocols.libraries.mls.errors.InvalidArgument`: the caller handed
over something the layer cannot use.  Decryption failures keep using
:class:`~protocols.libraries.mls.errors.DecryptionFailed`, and signature checks answer
``False`` rather than raising, as in the rest of the library.  No message ever
quotes key material.
"""

from __future__ import annotations

from ..errors import InvalidArgument


class UnsupportedCipherSuite(InvalidArgument):
    """A cipher suite id that is not one of RFC 9420's seven (section 17.1).

    ``suite_id`` is the id refused.
    """

    def __init__(self, suite_id: int) -> None:
        self.suite_id = suite_id
        super().__init__(f"cipher suite {suite_id} is not supported (known: 1 to 7, RFC 9420 section 17.1)")


class InvalidKey(InvalidArgument):
    """A public or private key has the wrong length or is not a valid key of its algorithm."""
