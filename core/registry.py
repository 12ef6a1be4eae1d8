"""Everything the plugins registered, indexed for dispatch."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pluggy

from core.errors import PluginError, UnknownCommand, UnknownHandler, UnknownProtocol
from core.protocol import Command, Job, ProjectorLike, Protocol

log = logging.getLogger("tessera.plugins")


class Registry:
    """Protocols, handlers, commands, projectors, jobs and transports by name."""

    def __init__(self, pm: pluggy.PluginManager):
        self.pm = pm
        self.hook = pm.hook
        self.protocols: dict[str, Protocol] = {}
        self.projectors: dict[str, ProjectorLike] = {}
        self.projectors_by_event: dict[tuple[str, str], list[ProjectorLike]] = defaultdict(list)
        self.jobs: dict[str, Job] = {}
        self.transports: dict[str, Any] = {}
        for protocol in self.hook.register_protocol():
            if protocol is not None:
                self._add_protocol(protocol)
        for jobs in self.hook.register_jobs():
            for job in jobs or ():
                self._add_unique(self.jobs, job.name, job, "job")
        for transports in self.hook.register_transports():
            for transport in transports or ():
                self._add_unique(self.transports, transport.name, transport, "transport")
        # Observer hooks cost a call per commit; skip them when no plugin listens.
        self.observes_commits = bool(self.hook.on_events_committed.get_hookimpls())
        self.observes_items = bool(self.hook.on_item_processed.get_hookimpls())

    def notify(self, hook_name: str, **kwargs: Any) -> None:
        """Call every plugin's observer hook ``hook_name`` (``on_*``), each on its own.

        Observers run after the work they observe has committed, so a failure
        there changes nothing durable: it is logged with the plugin's name and
        the other plugins still hear about it.  (Calling the hook through
        pluggy would stop at the first one that raises, and the exception
        would reach the daemon.)
        """
        for impl in reversed(getattr(self.hook, hook_name).get_hookimpls()):  # pluggy's own calling order
            try:
                impl.function(*(kwargs[name] for name in impl.argnames))
            except Exception:
                log.exception(
                    "plugin %s: observer hook %s raised; ignored (the observed work is committed)",
                    impl.plugin_name,
                    hook_name,
                )

    @staticmethod
    def _add_unique(table: dict[str, Any], name: str, value: Any, kind: str) -> None:
        if name in table:
            raise PluginError(f"two plugins register a {kind} named {name!r}; uninstall or rename one")
        table[name] = value

    def _add_protocol(self, protocol: Protocol) -> None:
        if not isinstance(protocol, Protocol):
            raise PluginError(f"register_protocol must return core.protocol.Protocol, got {type(protocol).__name__}")
        self._add_unique(self.protocols, protocol.name, protocol, "protocol")
        for projector in protocol.projectors:
            if not isinstance(projector, ProjectorLike):
                raise PluginError(
                    f"{protocol.name}: {projector!r} lacks the projector attributes (see projectors.Projector)"
                )
            if projector.protocol != protocol.name:
                raise PluginError(
                    f"projector {projector.name!r} says protocol {projector.protocol!r} "
                    f"but is registered by {protocol.name!r}"
                )
            self._add_unique(self.projectors, projector.name, projector, "projector")
            for event_type in sorted(projector.event_types):
                self.projectors_by_event[(protocol.name, event_type)].append(projector)

    # --- lookups --------------------------------------------------------------

    def protocol(self, name: str) -> Protocol:
        try:
            return self.protocols[name]
        except KeyError:
            known = ", ".join(sorted(self.protocols)) or "none"
            raise UnknownProtocol(f"no installed plugin provides protocol {name!r} (installed: {known})") from None

    def handler(self, protocol: str, envelope_type: str) -> Callable[..., Any]:
        handlers = self.protocol(protocol).handlers
        try:
            return handlers[envelope_type]
        except KeyError:
            raise UnknownHandler(
                f"protocol {protocol!r} has no handler for envelope type {envelope_type!r} "
                f"(it handles: {', '.join(sorted(handlers)) or 'nothing'})"
            ) from None

    def command(self, name: str) -> tuple[Protocol, Command]:
        protocol_name, _, command_name = name.partition(".")
        protocol = self.protocols.get(protocol_name)
        if protocol is None or command_name not in protocol.commands:
            known = sorted(f"{p.name}.{c}" for p in self.protocols.values() for c in p.commands)
            raise UnknownCommand(f"no command {name!r}; known commands: {', '.join(known) or 'none'}")
        return protocol, protocol.commands[command_name]

    def projectors_for(self, protocol: str, event_type: str) -> list[ProjectorLike]:
        return self.projectors_by_event.get((protocol, event_type), [])

    def projector(self, name: str) -> ProjectorLike:
        try:
            return self.projectors[name]
        except KeyError:
            raise UnknownProtocol(f"no projector {name!r}; known: {', '.join(sorted(self.projectors))}") from None

    def has_upcaster(self, protocol: str, event_type: str, version: int) -> bool:
        found = self.protocols.get(protocol)
        return found is not None and (event_type, version) in found.upcasters

    def upcast(self, protocol: str, event_type: str, version: int, data: Any) -> tuple[int, Any]:
        """Apply the protocol's upcasters until none matches; returns (version, data)."""
        upcasters = self.protocols[protocol].upcasters
        while (event_type, version) in upcasters:
            data = upcasters[(event_type, version)](data)
            version += 1
        return version, data
