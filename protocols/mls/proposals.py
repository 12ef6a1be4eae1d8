"""Proposals and the admin list.

Proposal types on the wire (``uint16``):

* ``1`` Add (RFC 9420): a key package.
* ``3`` Remove (RFC 9420): a leaf index.
* ``0xF0A1`` SelfRemove (engine-private, modelled on the MLS extensions
  draft): the proposer asks to be removed.  Only sent as a standalone
  proposal; a commit turns it into a Remove of the proposer's leaf.
* ``0xF0A0`` SetAdmins (engine-private, in the spirit of RFC 9420's
  GroupContextExtensions): replaces the admin list.  Only inside commits.

The admin list is also carried in the GroupContext as extension ``0xF0A0``
so every member's key schedule is bound to the same admin set.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import attrs

from .credentials import KeyPackage
from .tls import Reader, Writer

ADD = 1
REMOVE = 3
SET_ADMINS = 0xF0A0
SELF_REMOVE = 0xF0A1
ADMINS_EXTENSION = 0xF0A0


@attrs.frozen
class Add:
    key_package: KeyPackage


@attrs.frozen
class Remove:
    leaf: int


@attrs.frozen
class SelfRemove:
    pass


@attrs.frozen
class SetAdmins:
    admins: frozenset[str]


# What may wait in an epoch as a standalone proposal; SetAdmins only ever travels inside a commit.
StandaloneProposal = Add | Remove | SelfRemove
Proposal = StandaloneProposal | SetAdmins


def encode_admins(admins: Iterable[str]) -> bytes:
    """Sorted ``opaque admin[32]<V>``: canonical, so equal sets encode equally."""
    return Writer().vector(sorted(admins), lambda w, a: w.raw(bytes.fromhex(a))).bytes()


def decode_admins(r: Reader) -> frozenset[str]:
    """Inverse of :func:`encode_admins`; refuses unsorted or duplicate entries."""
    items = r.vector(lambda rr: rr.take(32).hex())
    if any(a >= b for a, b in itertools.pairwise(items)):
        raise r.fail("admin list is not sorted and unique")
    return frozenset(items)


def admins_extension(admins: Iterable[str]) -> tuple[tuple[int, bytes], ...]:
    """GroupContext extensions carrying the admin list."""
    return ((ADMINS_EXTENSION, encode_admins(admins)),)


def encode_proposal(w: Writer, p: Proposal) -> None:
    """Append ``Proposal``: uint16 type, then the body."""
    if isinstance(p, Add):
        w.u16(ADD)
        p.key_package.encode_to(w)
    elif isinstance(p, Remove):
        w.u16(REMOVE).u32(p.leaf)
    elif isinstance(p, SelfRemove):
        w.u16(SELF_REMOVE)
    else:
        w.u16(SET_ADMINS).raw(encode_admins(p.admins))


def decode_proposal(r: Reader) -> Proposal:
    """Read one ``Proposal``."""
    kind = r.u16()
    if kind == ADD:
        return Add(KeyPackage.decode_from(r))
    if kind == REMOVE:
        return Remove(r.u32())
    if kind == SELF_REMOVE:
        return SelfRemove()
    if kind == SET_ADMINS:
        return SetAdmins(decode_admins(r))
    raise r.fail(f"unknown proposal type {kind}")
