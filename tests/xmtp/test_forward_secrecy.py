"""Forward secrecy at rest for the XMTP client: its group states and KeyPackages are sealed erasably
(protocols/libraries/erasable.py), so once a transaction that replaces or uses one has committed, no stored copy
of the earlier version opens with what is left on disk."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from core.state import ProtocolState
from protocols.libraries import erasable
from protocols.xmtp.state import SEALER, StateKeyGone, Vault
from tests.disk_scan import database_text
from tests.xmtp.conftest import MakeMember, Member


def _stored(member: Member, name: str) -> bytes | None:
    with member.app.db.read():
        return ProtocolState(member.app.db, "xmtp").stored(name)


def _opens(member: Member, name: str, sealed: bytes) -> bool:
    try:
        erasable.open_sealed(member.app.db.path, SEALER.load_key(member.app.db), SEALER.label, name, sealed)
    except erasable.KeyGone:
        return False
    return True


def _key_packages(member: Member) -> dict[str, bytes]:
    with member.app.db.read():
        state = ProtocolState(member.app.db, "xmtp")
        return {name: state.stored(name) or b"" for name in state.keys("kp/")}


def test_replaced_group_states_and_a_used_key_package_no_longer_open(make_member: MakeMember) -> None:
    alice, bob = make_member(), make_member()
    offered = _key_packages(bob)
    assert offered and all(erasable.is_erasable(sealed) for sealed in offered.values())
    group = alice.create_group("secrets")
    alice.run("add_members", group=group.hex(), addresses=[bob.address])
    alice.settle()
    alice.publish()
    bob.sync()
    bob.run("accept", group=group.hex())
    bob.sync()
    used = [name for name, sealed in offered.items() if _stored(bob, name) is None]
    assert len(used) == 1  # the one alice's welcome was for: deleted, and its keys erased
    assert not _opens(bob, used[0], offered[used[0]])
    assert not erasable.key_file(bob.app.db.path, SEALER.label, used[0]).exists()
    name = Vault.group_name(group)
    versions: list[bytes] = []
    texts = [f"alice-secret-{n}-{os.urandom(6).hex()}" for n in range(4)]  # found nowhere else on disk
    for text in texts:
        sealed = _stored(bob, name)
        assert sealed is not None and erasable.is_erasable(sealed)
        versions.append(sealed)
        alice.run("send", group=group.hex(), text=text)
        alice.publish()
        bob.sync()
    # The last replaced key is erased by bob's erasing thread before his next seal of the state, and at the
    # latest when his app closes, which waits for it as this does.
    erasable.wait_for_erasures()
    current = _stored(bob, name)
    assert current is not None and current not in versions
    assert _opens(bob, name, current)
    assert not any(_opens(bob, name, old) for old in versions)
    for member in (alice, bob):  # no message text in the clear: the file, its WAL, the key files
        base = Path(member.app.db.path)
        raw = b"".join(p.read_bytes() for p in (base, Path(f"{base}-wal"), *Path(f"{base}-erasable").iterdir()))
        assert [text for text in texts if text.encode() in raw] == []
    assert bob.app.db.secret is not None
    in_pages = database_text(bob.app.db.path, bob.app.db.secret)  # while bob's decrypted pages hold every one
    assert all(text.encode() in in_pages for text in texts)


def test_a_copy_without_the_key_folder_names_the_folder(make_member: MakeMember, make_app: Any, tmp_path) -> None:
    from protocols import xmtp

    alice = make_member()
    group = alice.create_group("copied")
    copy = str(tmp_path / "copied.db")
    alice.app.db.conn.execute("VACUUM INTO ?", (copy,))
    alone = make_app([xmtp], ["xmtp"], path=copy)
    with alone.db.read(), pytest.raises(StateKeyGone, match="-erasable folder"):
        Vault.of(alone.db).group(group)
