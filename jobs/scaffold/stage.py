"""Write a new directory all at once: into a staging directory beside it, renamed into place when complete.

A failure part-way (a full disk, a name taken meanwhile) removes the staging
directory, so the target either holds every file or was never created.
"""

from __future__ import annotations

import errno
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path

from core.errors import InvalidInput


def refuse_existing(target: Path) -> None:
    """Raise InvalidInput unless ``target`` is absent or an empty directory."""
    if target.is_dir() and not any(target.iterdir()):
        return
    if target.exists() or target.is_symlink():
        raise InvalidInput(f"{target} already exists and is not an empty directory; remove it or pick another --dir")


def write_tree(target: Path, files: Mapping[str, str]) -> None:
    """Create directory ``target`` holding ``files`` (relative path -> text), all or nothing."""
    refuse_existing(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    # A fresh directory (not tempfile.mkdtemp's 0700) so the result gets the permissions of the umask.
    staging = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    staging.mkdir()
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        _move_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _move_into_place(staging: Path, target: Path) -> None:
    try:
        staging.rename(target)  # replaces an empty directory, refuses anything else
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            raise
        raise InvalidInput(
            f"{target} appeared while the plugin was being written; remove it or pick another --dir"
        ) from exc
