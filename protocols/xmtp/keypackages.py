"""Our stock of KeyPackages on the server: others invite us with them, each one once.

A welcome that joins us to a group uses one up (its private keys are
deleted with it, :mod:`.processing`).  The key-package job keeps
:data:`STOCK` unused ones: ``xmtp.top_up_key_packages`` makes the missing
ones (one transaction), then those the server has not had yet are published
and recorded in ``xmtp_published_key_packages`` — so a KeyPackage an inviter
already fetched is never offered again, even while its welcome is on the way.
"""

from __future__ import annotations

import logging
from typing import Any

from core import contract
from core.records import Result
from protocols.libraries import mls
from protocols.xmtp.errors import ServiceRefused, ServiceUnavailable
from protocols.xmtp.state import BINDING_EXTENSION, Identity, Vault
from protocols.xmtp.transport.interface import DeliveryService

log = logging.getLogger("tessera.xmtp.keypackages")

#: How many unused KeyPackages we keep for others to invite us with.
STOCK = 5
_IDENTITY_PUBLISHED = "xmtp.identity_published"


def new_key_packages(vault: Vault, identity: Identity, count: int) -> list[Any]:
    """Intents storing ``count`` fresh KeyPackages of ``identity`` (with their private keys) for the stock."""
    made = []
    for _ in range(count):
        key_package, private = mls.create_key_package(
            identity.mls_identity(),
            leaf_extensions=[identity.binding_extension()],
            supported_extensions=[BINDING_EXTENSION],
        )
        made.append(vault.key_package_intent(private, mls.key_package_reference(key_package)))
    return made


def command_top_up(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Make the KeyPackages that bring the unused stock back to :data:`STOCK`."""
    vault = Vault.in_context(ctx)
    missing = STOCK - len(vault.key_package_refs())
    if missing <= 0:
        return Result(duplicate=True)
    return Result(intents=new_key_packages(vault, vault.identity(), missing))


def unpublished(runtime: contract.Runtime) -> list[tuple[bytes, bytes]]:
    """``(ref, KeyPackage bytes)`` of the stock the server has not had (only those are unsealed)."""
    with runtime.db.read():
        vault = Vault.of_runtime(runtime)
        given = {bytes(row[0]) for row in runtime.db.all("SELECT ref FROM xmtp_published_key_packages")}
        fresh = [(ref, vault.key_package(ref)) for ref in vault.key_package_refs() if ref not in given]
    return [(ref, mls.key_package_to_bytes(private.key_package)) for ref, private in fresh if private is not None]


def register(runtime: contract.Runtime, service: DeliveryService) -> int:
    """Publish our binding (once) and the KeyPackages the server has not had; returns how many went out."""
    with runtime.db.read():
        identity = Vault.of_runtime(runtime).identity()
        bound = runtime.kv.get(_IDENTITY_PUBLISHED) == identity.installation_id
    if not bound:
        service.publish_identity(identity.address, identity.binding.to_bytes())
        with runtime.db.write():
            runtime.kv.set(_IDENTITY_PUBLISHED, identity.installation_id)
    fresh = unpublished(runtime)
    if not fresh:
        return 0
    service.publish_key_packages([data for _, data in fresh])
    now_ns = runtime.clock.now_ms() * 1_000_000
    with runtime.db.write():
        runtime.db.executemany(
            "INSERT INTO xmtp_published_key_packages(ref, published_at_ns) VALUES (?, ?) ON CONFLICT DO NOTHING",
            [(ref, now_ns) for ref, _ in fresh],
        )
    return len(fresh)


def keep_stock(runtime: contract.Runtime, service: DeliveryService) -> int:
    """Top the stock up and publish what is new (the job); a server that cannot be reached waits for the next pass."""
    with runtime.db.read():
        short = len(Vault.of_runtime(runtime).key_package_refs()) < STOCK
    if short:
        runtime.run_command("xmtp.top_up_key_packages", {})
    try:
        return register(runtime, service)
    except (ServiceUnavailable, ServiceRefused) as exc:
        log.info("publishing KeyPackages waits: %s", exc)
        return 0
