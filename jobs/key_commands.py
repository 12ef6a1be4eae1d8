"""``tessera key new|rotate``, ``tessera encrypt`` and ``tessera backup``: the database's one secret and the file encrypted under it.

See :mod:`core.keys` (the key file and what derives from it) and
:mod:`core.encryption` (the crash-safe rewrites); docs/operations.md ("Keys")
says how to run them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from jobs import output
from jobs.cli_options import json_option

if TYPE_CHECKING:
    from jobs.cli import CliState


def _report(as_json: bool, line: str, **fields: object) -> None:
    click.echo(output.to_json(fields) if as_json else line)


@click.group("key")
def key() -> None:
    """Make a database's key file, or give the database a new one."""


@key.command("new")
@click.option(
    "--out", "out", required=True, type=click.Path(dir_okay=False), help="Where to write the key (never overwritten)."
)
@json_option
def key_new(out: str, as_json: bool) -> None:
    """Write a fresh 32-byte key (64 hex characters) to OUT with mode 0600; keep a backup of it somewhere safe."""
    from core import keys

    keys.write_new_key_file(out)
    _report(
        as_json, f"{out}: new key written (mode 0600); back it up: without it the database cannot be read", key_file=out
    )


@key.command("rotate")
@click.option(
    "--new-key-file",
    required=True,
    type=click.Path(dir_okay=False, exists=True),
    help="The new key (make it with `tessera key new`); the old one comes from --key-file.",
)
@json_option
@click.pass_obj
def key_rotate(obj: CliState, new_key_file: str, as_json: bool) -> None:
    """Re-encrypt the database under a new key, crash-safely; stop the daemon and every other user of it first."""
    from core import encryption, keys
    from core.db import Database

    new_secret = keys.read_key_file(new_key_file)
    with Database(obj.settings.db, obj.settings, create=False) as db:
        encryption.rotate(db, new_secret)
    _report(
        as_json,
        f"{obj.settings.db}: re-encrypted under {new_key_file}; use that key file from now on",
        database=obj.settings.db,
        key_file=new_key_file,
    )


@click.command("encrypt")
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    help="Write the encrypted copy here (a new file) instead of converting the database in place.",
)
@json_option
@click.pass_obj
def encrypt(obj: CliState, out: str | None, as_json: bool) -> None:
    """Encrypt a plaintext database with the key file's secret, in place or into a new file (never overwritten)."""
    from core import encryption
    from core.db import Database

    with Database(obj.settings.db, obj.settings, create=False) as db:
        written = encryption.encrypt(db, out)
    _report(as_json, f"{written}: encrypted", database=written, encrypted=True)


@click.command("backup")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="The new file (never overwritten).")
@json_option
@click.pass_obj
def backup(obj: CliState, out: str, as_json: bool) -> None:
    """Copy the database, as it is now, to a new file under the same key (VACUUM INTO); the daemon may run."""
    from core import encryption
    from core.db import Database

    with Database(obj.settings.db, obj.settings, readonly=True) as db:
        encryption.backup(db, out)
        encrypted = db.encrypted
    how = "encrypted under the same key file" if encrypted else "in the clear, like the database"
    _report(as_json, f"{out}: backup written ({how})", backup=out, encrypted=encrypted)
