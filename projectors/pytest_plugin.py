"""pytest plugin (auto-loaded once tessera is installed): projector test-kit fixtures.

``make_projector_kit(plugins, protocols)`` returns a
:class:`projectors.testkit.ProjectorKit` working in the test's tmp_path; see
also :class:`projectors.testkit.ProjectorContract` for ready-made tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from projectors.testkit import ProjectorKit


@pytest.fixture
def make_projector_kit(tmp_path: Path) -> Callable[..., ProjectorKit]:
    """``make_projector_kit(plugins, protocols, **options)``: a :class:`ProjectorKit` on ``tmp_path``."""

    def make(plugins: Sequence[object], protocols: Sequence[str], **kwargs: Any) -> ProjectorKit:
        return ProjectorKit(plugins, protocols, tmp_path, **kwargs)

    return make
