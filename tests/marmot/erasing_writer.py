"""A Marmot member driven line by line, as its own process, for the crash tests of forward secrecy at rest.

    python -m tests.marmot.erasing_writer DB

It prints ``ready``, then answers each command on its standard input: ``deliver HEX`` queues that outer
event and handles it (``committed`` once its transaction has committed and returned), ``settle`` waits for its
erasing thread (``settled``), ``close`` closes the app (``closed``) and exits.  The at-rest key comes from the
environment, as for the tick worker (tests/marmot/worker.py).
"""

from __future__ import annotations

import sys

from core import drain
from protocols.libraries import erasable
from tests.helpers import push
from tests.marmot.worker import open_marmot


def main() -> None:
    app = open_marmot(sys.argv[1])
    print("ready", flush=True)
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "deliver":
            push(app, bytes.fromhex(argument), protocol="marmot")
            drain.run_until_idle(app.runtime)
            print("committed", flush=True)
        elif command == "settle":
            erasable.wait_for_erasures()
            print("settled", flush=True)
        elif command == "close":
            app.close()
            print("closed", flush=True)
            return
        else:
            raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
