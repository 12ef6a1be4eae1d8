"""Record real libxmtp clients' uploads into ``data/captured.json`` (run again to refresh them).

    PYTHONPATH=. python -m tests.xmtp_identity.record

Needs the ``xmtp-bindings`` peer (installed into the peers cache on first use).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.xmtp_identity.capture import RECORDED, capture
from tests.xmtp_node.ceiling_node import CeilingNode
from tests.xmtp_node.libxmtp_peer import client_factory, install


def main() -> None:
    python = install()
    with tempfile.TemporaryDirectory(prefix="xmtp-capture-") as scratch, CeilingNode() as node:
        make, close_all = client_factory(python, Path(scratch))
        try:
            captured = capture(make, node)
        finally:
            close_all()
    RECORDED.parent.mkdir(exist_ok=True)
    RECORDED.write_text(captured.to_json() + "\n")
    print(
        f"{RECORDED}: {len(captured.key_packages)} key packages, {len(captured.identity_updates)} identity updates, "
        f"{len(captured.group_messages)} group messages, {len(captured.welcomes)} welcomes"
    )


if __name__ == "__main__":
    main()
