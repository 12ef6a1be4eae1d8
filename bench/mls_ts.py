"""ts-mls's side of bench/mls.py: runs bench/mls_ts.mjs under Node and reads its results.

The pinned ts-mls is the one the interop tests use, found and installed by
``tests/mls/peer/ts_mls.py`` (loaded from its file: the test tree is not a
package the benchmarks import).  The timing happens inside Node, so the
JSON-lines exchange costs nothing that is measured.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PEER_MODULE = ROOT / "tests" / "mls" / "peer" / "ts_mls.py"
SCRIPT = Path(__file__).resolve().parent / "mls_ts.mjs"


class TsMlsUnavailable(RuntimeError):
    """ts-mls cannot run here (no Node.js 20+, or its packages could not be installed)."""


def _peer_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tessera_bench_ts_mls_peer", PEER_MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def node_and_install() -> tuple[str, Path, str]:
    """Node's path, the directory holding the pinned ts-mls, and the ts-mls version; raises TsMlsUnavailable."""
    peer = _peer_module()
    try:
        node, npm = peer.find_node()
        return node, peer.ensure_installed(npm), peer.TS_MLS_VERSION
    except peer.PeerUnavailable as error:
        raise TsMlsUnavailable(str(error)) from error


def node_version(node: str) -> str:
    return subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()


def run_ts_mls(
    node: str,
    install: Path,
    *,
    suite: int,
    sizes: Sequence[int],
    runs: Mapping[int, int],
    messages: int,
    payload_bytes: int,
    status: Callable[[str], None],
) -> list[dict[str, Any]]:
    """ts-mls's results per group size (see bench/mls_ts.mjs), passing its progress lines to ``status``."""
    config = {
        "suite": suite,
        "sizes": list(sizes),
        "runs": {str(size): runs[size] for size in sizes},
        "messages": messages,
        "payload_bytes": payload_bytes,
    }
    command = [node, str(SCRIPT), str(install), json.dumps(config)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None and child.stderr is not None
        for line in child.stdout:
            answer = json.loads(line)
            if "status" in answer:
                status(answer["status"])
            else:
                results: list[dict[str, Any]] = answer["results"]
        errors = child.stderr.read()
    if child.returncode != 0:
        raise RuntimeError(f"bench/mls_ts.mjs exited with {child.returncode}: {errors.strip()[-2000:]}")
    return results
