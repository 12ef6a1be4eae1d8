"""pytest plugin (auto-loaded once tessera is installed): projector test-kit fixtures.

``make_projector_kit(plugins, protocols)`` returns a
:class:`projectors.testkit.ProjectorKit` working in the test's tmp_path; see
also :class:`projectors.testkit.ProjectorContract` for ready-made tests.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def make_projector_kit(tmp_path):
    from projectors.testkit import ProjectorKit

    def make(plugins, protocols, **kwargs):
        return ProjectorKit(plugins, protocols, tmp_path, **kwargs)

    return make
