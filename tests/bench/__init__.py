"""Tests of the benchmark suite and its scripts; :func:`run` runs one as a user would."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def run(*args: str, timeout: float = 120, **environment: str) -> subprocess.CompletedProcess[str]:
    """``python <args>`` in the project's root, its output captured, in an environment naming no key file, as a
    user's who runs the benchmarks (the suite's own names one for every database it makes), plus
    ``environment``."""
    env = {name: value for name, value in os.environ.items() if name != "TESSERA_KEY_FILE"} | environment
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False, env=env
    )
