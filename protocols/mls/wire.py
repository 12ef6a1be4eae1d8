"""Envelope of every top-level encoding the engine produces.

Each blob starts with a two-byte format version and a one-byte kind, so a
blob of one kind can never be mistaken for another and a later format can be
introduced without ambiguity.  These are the engine's own formats, not
RFC 9420's MLSMessage.
"""

from __future__ import annotations

from .errors import MlsError
from .tls import Reader, Writer

FORMAT_VERSION = 1

KIND_GROUP_MESSAGE = 1
KIND_WELCOME = 2
KIND_KEY_PACKAGE = 3
KIND_KEY_PACKAGE_PRIVATE = 4
KIND_IDENTITY = 5
KIND_SNAPSHOT = 6

_KIND_NAMES = {
    KIND_GROUP_MESSAGE: "group message",
    KIND_WELCOME: "welcome",
    KIND_KEY_PACKAGE: "key package",
    KIND_KEY_PACKAGE_PRIVATE: "key package private part",
    KIND_IDENTITY: "identity",
    KIND_SNAPSHOT: "group state snapshot",
}


def writer(kind: int) -> Writer:
    """A writer that already holds the envelope header for ``kind``."""
    return Writer().u16(FORMAT_VERSION).u8(kind)


def reader(data: bytes, kind: int, error: type[MlsError]) -> Reader:
    """A reader positioned after a header that was checked to be ``kind``."""
    r = Reader(data, error)
    version, got = r.u16(), r.u8()
    if version != FORMAT_VERSION:
        raise r.fail(f"unsupported format version {version}")
    if got != kind:
        have = _KIND_NAMES.get(got, f"unknown kind {got}")
        raise r.fail(f"expected a {_KIND_NAMES[kind]}, got a {have}")
    return r
