"""Relay addresses: checked and written one way, so one relay never counts as two."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from protocols.marmot.relays.errors import InvalidRelayUrl, NoRelays

_DEFAULT_PORTS = {"ws": 80, "wss": 443}


def _refuse(url: object, problem: str) -> InvalidRelayUrl:
    return InvalidRelayUrl(f"relay address {url!r} {problem}; write it like wss://relay.example.com")


def normalise_relay_url(url: str) -> str:
    """Return ``url`` as ``ws[s]://host[:port][/path]``: lowercase scheme and host, no default port, no trailing slash.

    Raises :class:`InvalidRelayUrl` for anything else: another scheme, no host,
    a bad port, credentials, a fragment, or whitespace.
    """
    if not isinstance(url, str):
        raise _refuse(url, f"is a {type(url).__name__}, not a string")
    if not url or url != url.strip() or any(ch.isspace() for ch in url):
        raise _refuse(url, "is empty or contains whitespace")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise _refuse(url, "must start with ws:// or wss://")
    if not parts.hostname:
        raise _refuse(url, "has no host")
    if parts.username is not None or parts.password is not None:
        raise _refuse(url, "must not carry credentials")
    if parts.fragment:
        raise _refuse(url, "must not have a #fragment")
    try:
        port = parts.port
    except ValueError:
        raise _refuse(url, "has a port that is not a number from 0 to 65535") from None
    host = parts.hostname.lower()
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{netloc}{path}{query}"


def normalise_relay_urls(urls: Iterable[str]) -> tuple[str, ...]:
    """Normalise every address, drop repeats (first one wins), and refuse an empty list with :class:`NoRelays`."""
    if isinstance(urls, str):
        raise _refuse(urls, "was given where a list of relay addresses was expected")
    unique = tuple(dict.fromkeys(normalise_relay_url(url) for url in urls))
    if not unique:
        raise NoRelays("no relay addresses were given; pass at least one ws:// or wss:// address")
    return unique
