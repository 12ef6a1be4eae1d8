"""The name Tessera is installed under, and the version installed.

The import packages (``core``, ``jobs``...) and the ``tessera`` command keep
their names, but the distribution is ``tessera-cqrs``: on the package index
``tessera`` belongs to an unrelated project, so anything that depends on us
(a scaffolded plugin) must name this one.
"""

from __future__ import annotations

from importlib import metadata

NAME = "tessera-cqrs"


def installed_version() -> str | None:
    """The installed distribution's version; None when running from a checkout that was never installed."""
    try:
        return metadata.version(NAME)
    except metadata.PackageNotFoundError:
        return None


def requirement() -> str:
    """What a package that needs this Tessera puts in its dependencies: at least the installed version."""
    version = installed_version()
    return NAME if version is None else f"{NAME}>={version}"
