"""The plugin's settings, declared to the core (``[xmtp]`` in the config file, ``TESSERA_XMTP_*``).

A module of its own, cheap to import: the core asks for it whenever settings are read.
"""

from __future__ import annotations

from core.setting import Setting

DECRYPT_AHEAD = Setting(
    "decrypt_ahead",
    True,
    "Decrypt a group's catch-up pages ahead in a helper process; false: every page is handled in this process.",
    0,
    1,
    section="xmtp",
)

KEY_PACKAGE_GRACE_S = Setting(
    "key_package_grace_s",
    30 * 24 * 3600,
    "Node profile: seconds a KeyPackage's private keys are kept past its lifetime's end (not_after) for a "
    "welcome sealed to it before then; after that the key-package job deletes them.",
    0,
    365 * 24 * 3600,
    section="xmtp",
)

SETTINGS: tuple[Setting, ...] = (DECRYPT_AHEAD, KEY_PACKAGE_GRACE_S)
