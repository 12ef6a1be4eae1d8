"""The plugins' service objects of one opened app: opened in order, found by type, closed in reverse.

A plugin that keeps anything per database (a delivery service connection, a
relay pool, observers, caches) returns one object for it from the
``open_service(app)`` hook; the app keeps it here until it closes.  Lookups
are by the class the plugin defined, so ``runtime.service(XmtpMember)`` is
typed ``XmtpMember`` for mypy and two apps in one process never share one.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from core.errors import PluginError, ServiceNotOpen

if TYPE_CHECKING:
    import pluggy

    from core.contract import App

log = logging.getLogger("tessera.plugins")

S = TypeVar("S")


@runtime_checkable
class Closable(Protocol):
    """What the core asks of a service object: a ``close()`` that frees what it holds."""

    def close(self) -> None: ...


class Services:
    """Service objects by type, in the order they were opened."""

    def __init__(self) -> None:
        self._opened: list[tuple[str, Closable]] = []
        self._by_type: dict[type, Closable] = {}

    def open(self, hook: pluggy.HookRelay, app: App) -> None:
        """Ask every plugin's ``open_service`` for its object; if one fails, close those opened and re-raise."""
        for impl in reversed(hook.open_service.get_hookimpls()):  # pluggy's own calling order
            try:
                service = impl.function(app)
                if service is None:
                    continue
                if not isinstance(service, Closable):
                    raise PluginError(
                        f"plugin {impl.plugin_name!r}: open_service returned a {type(service).__name__}, "
                        "which has no close(); return an object with close(), or None"
                    )
                self.add(service, impl.plugin_name)
            except BaseException:
                self.close()
                raise

    def add(self, service: Closable, owner: str) -> None:
        """Keep ``service`` (opened by plugin ``owner``) until :meth:`close`."""
        kind = type(service)
        if kind in self._by_type:
            raise PluginError(f"plugins {owner!r} and another both open a {kind.__name__} service; one per type")
        self._by_type[kind] = service
        self._opened.append((owner, service))

    def get(self, kind: type[S]) -> S:
        """The service object of type ``kind``."""
        found = self._by_type.get(kind)
        if not isinstance(found, kind):
            known = ", ".join(sorted(type(s).__name__ for _, s in self._opened)) or "none"
            raise ServiceNotOpen(
                f"no plugin opened a {kind.__name__} service on this database (open: {known}); "
                "is its plugin installed (`tessera plugins`)?"
            )
        return found

    def close(self) -> None:
        """Close every service, the last opened first; one that fails is logged and the others still close."""
        while self._opened:
            owner, service = self._opened.pop()
            self._by_type.pop(type(service), None)
            try:
                service.close()
            except Exception:
                log.exception("plugin %s: closing its %s failed; ignored", owner, type(service).__name__)
