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

SETTINGS: tuple[Setting, ...] = (DECRYPT_AHEAD,)
