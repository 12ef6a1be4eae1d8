"""``tessera parked list --show ID``: one parked item as people read it, its payload decoded when its plugin can.

The plugin's ``describe`` (see :class:`core.protocol.Protocol`) turns the blob
into readable public fields and never shows key material; a protocol with no
describer, one no longer installed, or a blob its describer cannot read is
shown in hex.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from core.registry import Registry
from jobs.output import plural


def shown(registry: Registry, item: dict[str, Any]) -> dict[str, Any]:
    """``item`` (from :func:`core.queues.parked_item`) with ``payload`` (decoded) or ``payload_hex``."""
    blob = bytes(item["blob"])
    view = {key: value for key, value in item.items() if key != "blob"}
    protocol = registry.protocols.get(item["protocol"])
    described = protocol.describe(blob) if protocol is not None and protocol.describe is not None else None
    if described is None:
        return {**view, "payload_hex": blob.hex()}
    return {**view, "payload": described}


def lines(view: dict[str, Any], payload_json: str) -> Iterator[str]:
    """The text form of :func:`shown`'s result; ``payload_json`` is its payload as printed JSON."""
    yield f"parked item {view['id']}: {view['protocol']}/{view['source']}, {plural(view['attempts'], 'attempt')}"
    yield f"reason: {view['reason']}"
    if view["partition_key"]:
        yield f"partition: {view['partition_key']}"
    if view.get("destination"):
        yield f"going to: {view['transport']} {view['destination']}"
    if "payload" in view:
        yield f"payload ({plural(view['size'], 'byte')}, decoded by the {view['protocol']} plugin):"
        yield payload_json
    else:
        yield f"payload ({plural(view['size'], 'byte')}, hex):"
        yield view["payload_hex"]
