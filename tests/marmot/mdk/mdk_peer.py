"""MDK 0.8.0, the reference Marmot implementation, as an in-process peer for interop tests.

``mdk-python`` is a pure uniffi wheel (no dependencies): ``mdk/mdk_uniffi.py``
loading ``mdk/libmdk_uniffi.so`` with ctypes.  It is installed once into the
peers cache (never into the project's environment) and imported from there.
Its ``.so`` asks for ``GLIBC_2.39`` only for two symbols it imports weakly;
on an older glibc the cached copy is patched by :mod:`.elf_weak` so it loads.

A :class:`MdkMember` is one MDK client: a Nostr key and its own encrypted
SQLite file.  MDK never signs KeyPackage events (it returns content and tags);
the member signs them with its key, as a Nostr client would.
"""

from __future__ import annotations

import base64
import functools
import importlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from protocols.marmot.wire import nostr
from tests._peers import PeerUnavailable, _run, install_once
from tests.marmot.mdk import elf_weak

MDK_VERSION = "0.8.0"
REQUIREMENT = f"mdk-python=={MDK_VERSION}"
LIBRARY = Path("mdk") / "libmdk_uniffi.so"
ORIGINAL = Path("original") / "libmdk_uniffi.so"
KEY_PACKAGE_KIND = 30443
LEGACY_KEY_PACKAGE_KIND = 443
DEFAULT_RELAYS = ("ws://127.0.0.1:7777",)


def _build(work: Path) -> None:
    site = work / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"]
    _run([*pip, "--target", str(site), REQUIREMENT], f"pip install {REQUIREMENT}")
    # The untouched library stays beside the patched one, so the patch can be checked against it.
    (work / "original").mkdir()
    shutil.copy2(site / LIBRARY, work / ORIGINAL)
    try:
        elf_weak.weaken_too_new_glibc(site / LIBRARY)
    except (elf_weak.NotPatchable, OSError) as error:
        raise PeerUnavailable(f"MDK's {LIBRARY} cannot be made to load on this glibc: {error}") from None


def install() -> Path:
    """The cache directory holding ``site/mdk`` (patched for this glibc) and ``original/``, installed on first use."""
    glibc = ".".join(map(str, elf_weak.running_glibc() or ("none",)))
    # The patch depends on the glibc it was made for, so each glibc gets its own copy.
    return install_once("mdk-python", _build, pinned=f"{REQUIREMENT} glibc-{glibc} weak-v2")


@functools.cache
def load() -> ModuleType:
    """The ``mdk`` module from the cache; raises :class:`PeerUnavailable` saying why it cannot run."""
    site = str(install() / "site")
    if site not in sys.path:
        sys.path.insert(0, site)
    try:
        module = importlib.import_module("mdk")
    except (ImportError, OSError) as error:
        raise PeerUnavailable(f"MDK {MDK_VERSION} does not load here: {error}") from None
    if module.__version__ != MDK_VERSION:
        raise PeerUnavailable(f"found mdk {module.__version__} at {module.__file__}, not {MDK_VERSION}")
    return module


class MdkMember:
    """One MDK client: a fresh Nostr key and its own SQLite file (opened with a random key).

    Attributes:
        name: a label for messages.
        secret_key: its Nostr secret key (32 bytes).
        pubkey: its x-only public key, hex.
        mdk: the ``mdk.Mdk`` instance.
    """

    def __init__(self, module: ModuleType, name: str, database: Path, *, config: Any = None):
        self.name = name
        self.secret_key = nostr.generate_secret_key()
        self.pubkey = nostr.public_key_xonly(self.secret_key).hex()
        self.mdk: Any = module.new_mdk_with_key(str(database), os.urandom(32), config)

    def __repr__(self) -> str:
        return f"MdkMember({self.name}, {self.pubkey[:12]})"

    def sign(self, kind: int, content: str, tags: list[list[str]], *, created_at: int | None = None) -> dict:
        """A signed event by this member."""
        unsigned = {"created_at": created_at or int(time.time()), "kind": kind, "tags": tags, "content": content}
        return nostr.sign_event(unsigned, self.secret_key)

    def key_package_event(self, relays: tuple[str, ...] = DEFAULT_RELAYS, *, legacy: bool = False) -> dict:
        """A fresh KeyPackage of this member as a signed kind-30443 event (kind 443 with ``legacy``)."""
        made = self.mdk.create_key_package_for_event(self.pubkey, list(relays))
        if legacy:
            return self.sign(LEGACY_KEY_PACKAGE_KIND, made.key_package, made.tags_legacy)
        return self.sign(KEY_PACKAGE_KIND, made.key_package, made.tags)

    def create_group(
        self,
        key_package_events: list[dict],
        *,
        name: str = "interop",
        description: str = "",
        relays: tuple[str, ...] = DEFAULT_RELAYS,
        admins: tuple[str, ...] | None = None,
    ) -> tuple[Any, list[dict]]:
        """Create a group inviting ``key_package_events``; returns MDK's group and its kind-444 welcome rumors.

        The creating commit is merged at once (MDK leaves it pending until told).
        """
        result = self.mdk.create_group(
            self.pubkey,
            [json.dumps(event) for event in key_package_events],
            name,
            description,
            list(relays),
            list(admins if admins is not None else (self.pubkey,)),
        )
        self.mdk.merge_pending_commit(result.group.mls_group_id)
        return result.group, [json.loads(rumor) for rumor in result.welcome_rumors_json]

    def join(self, rumor: dict, wrapper_event_id: str | None = None) -> Any:
        """Process and accept a kind-444 welcome rumor; returns MDK's welcome record."""
        wrapper = wrapper_event_id or os.urandom(32).hex()
        welcome = self.mdk.process_welcome(wrapper, json.dumps(rumor))
        self.mdk.accept_welcome(welcome)
        return welcome

    def send(self, mls_group_id: str, content: str, *, kind: int = 9) -> dict:
        """A chat message (or another rumor ``kind``) to the group, as the signed kind-445 event MDK makes."""
        return json.loads(self.mdk.create_message(mls_group_id, self.pubkey, content, kind, None, None))

    def receive(self, event: dict) -> Any:
        """MDK's ``process_message`` on a kind-445 event."""
        return self.mdk.process_message(json.dumps(event))


def open_group_event(event: dict, group_event_key: bytes) -> bytes:
    """The MLS message in an MDK kind-445 event: its content is base64(nonce || ChaCha20-Poly1305 ciphertext).

    ``group_event_key`` is the epoch's ``MLS-Exporter("marmot", "group-event", 32)``;
    the associated data is empty.  (MDK 0.8.0 does not use NIP-44 here.)
    """
    sealed = base64.b64decode(event["content"], validate=True)
    return ChaCha20Poly1305(group_event_key).decrypt(sealed[:12], sealed[12:], b"")
