"""Checking what commands are given: hex public keys, relay URLs, hex-encoded bytes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.errors import InvalidInput
from protocols.marmot.wire import key_package_events


def hex_keys(values: object, what: str) -> list[str]:
    """``values`` as lowercase 64-hex public keys; InvalidInput naming ``what`` otherwise."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidInput(f"{what} must be a list of hex public keys")
    keys = [str(value).strip().lower() for value in values]
    for key in keys:
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise InvalidInput(f"{what}: {key!r} is not a 64-character hex public key")
    return keys


def relay_urls(values: object) -> list[str]:
    """``values`` as checked relay URLs (None: none)."""
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidInput("relays must be a list of ws:// or wss:// URLs")
    return [key_package_events.check_relay_url(str(url), _relay_error) for url in values]


def _relay_error(message: str, field: str) -> Exception:
    return InvalidInput(f"{field}: {message}")


def hex_bytes(params: dict[str, Any], name: str) -> bytes:
    """Parameter ``name`` decoded from hex."""
    try:
        return bytes.fromhex(params[name])
    except (KeyError, TypeError, ValueError):
        raise InvalidInput(f"parameter {name!r} must be a hex string") from None
