"""The groups of message-protection.json: two members, leaf 1 sending, leaf 0 receiving.

Each vector gives one epoch's GroupContext fields, its membership key,
sender-data and encryption secrets, and the sender's signature key pair;
:class:`Group` (the conformance checker's) builds both members' views of that epoch from them.
"""

from __future__ import annotations

import pytest

from protocols.libraries.mls.conformance.checkers.message_protection import KINDS, RECEIVER, SENDER, Group
from tests.mls.crypto._vectors import mls

VECTORS = mls("message-protection")
CASES = pytest.mark.parametrize("vector", VECTORS, ids=[f"suite-{v['cipher_suite']}" for v in VECTORS])

__all__ = ["CASES", "KINDS", "RECEIVER", "SENDER", "VECTORS", "Group"]
