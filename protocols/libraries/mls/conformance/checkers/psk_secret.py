"""psk_secret.json: the combined secret of 0 to 10 external PSKs (RFC 9420 section 8.4)."""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.messages import ExternalPSK, PreSharedKeyID
from protocols.libraries.mls.schedule import psk_secret

KEYS = frozenset({"cipher_suite", "psks", "psk_secret"})


def check(entry: dict[str, Any]) -> list[Failure]:
    psks: list[tuple[PreSharedKeyID, bytes]] = [
        (ExternalPSK(h(p["psk_id"]), h(p["psk_nonce"])), h(p["psk"])) for p in entry["psks"]
    ]
    return compare("psk_secret", psk_secret(suite(entry["cipher_suite"]), psks), h(entry["psk_secret"]))
