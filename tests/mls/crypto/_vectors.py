"""Loaders for the vectors of the crypto layer (see the SOURCES.md beside each vector folder)."""

from __future__ import annotations

import json
from typing import Any

from protocols.libraries.mls.conformance.shipped import vector_file
from protocols.libraries.mls.crypto import Rng
from tests.helpers import VECTORS

HPKE_FILE = VECTORS / "hpke" / "rfc9180-base-mode.json"
SUITE_IDS = tuple(range(1, 8))


def mls(name: str) -> list[dict[str, Any]]:
    """Every entry of the shipped ``<name>.json`` (protocols/libraries/mls/conformance/vectors)."""
    entries: list[dict[str, Any]] = json.loads(vector_file(name).read_text())
    assert {entry["cipher_suite"] for entry in entries} == set(SUITE_IDS), f"{name}.json lacks a suite"
    return entries


def hpke() -> list[dict[str, Any]]:
    """The RFC 9180 base-mode entries."""
    entries: list[dict[str, Any]] = json.loads(HPKE_FILE.read_text())
    assert entries
    return entries


def h(value: str | None) -> bytes:
    """Hex string from a vector to bytes."""
    return bytes.fromhex(value or "")


def fixed(value: bytes) -> Rng:
    """An rng that returns ``value`` and insists on being asked for exactly its length."""

    def rng(n: int) -> bytes:
        assert n == len(value), f"asked for {n} random bytes, the vector has {len(value)}"
        return value

    return rng
