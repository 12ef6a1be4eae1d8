"""Projectors: the contract, the local replay engine, the Arrow fold and the test kit.

Lives here: :class:`Projector` (the contract every read model keeps), the
local replay that rebuilds a projection from the log, the Arrow fold both rebuild
engines run (Spark's in its executors), table comparison, and ``testkit``, which checks a
plugin's projectors for idempotence, determinism and partition independence.

May import: ``core`` and ``schema_loader``; never ``jobs`` or a protocol (it
finds protocol projectors through the registry)."""

from projectors.contract import Projector

__all__ = ["Projector"]
