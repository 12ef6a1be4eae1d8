"""Serve the XMTP benchmark's ceiling node (tests/xmtp_node/ceiling_node.py) on 127.0.0.1 until interrupted.

    PYTHONPATH=. python bench/xmtp_node_ceiling.py [--port PORT]

It keeps everything in memory and checks nothing: point real XMTP clients at
it to try the wire or to measure them, never to keep anything.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.xmtp_node.ceiling_node import Memory, start_server


async def serve_forever(port: int) -> None:
    server, bound = await start_server(Memory(), port)
    print(f"XMTP ceiling node on http://127.0.0.1:{bound} (in memory, no validation: a benchmark ceiling only)")
    await server.wait_for_termination()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--port",
        type=int,
        default=5556,
        help="port on 127.0.0.1 (0 picks a free one; default 5556, libxmtp's local port)",
    )
    arguments = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how it is meant to end
        asyncio.run(serve_forever(arguments.port))


if __name__ == "__main__":
    main()
