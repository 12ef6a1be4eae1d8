"""Who a group's members are: each leaf carries its installation's binding to an account address.

Members learn each other's addresses from the group itself, never from the
server: the binding in a leaf is checked (the account's signature, and that
it names the leaf's own installation) before its address is believed.  A
leaf whose binding is missing or does not verify is shown as ``unverified``.
"""

from __future__ import annotations

import functools

from protocols.libraries import mls
from protocols.xmtp.errors import InvalidBinding
from protocols.xmtp.identity import InstallationBinding, verify
from protocols.xmtp.state import BINDING_EXTENSION

UNVERIFIED = "unverified"


@functools.lru_cache(maxsize=4096)
def checked_address(binding: bytes | None, installation: str) -> str:
    """The address ``binding`` proves ``installation`` belongs to, or :data:`UNVERIFIED`."""
    if binding is None:
        return UNVERIFIED
    try:
        parsed = InstallationBinding.from_bytes(binding)
        verify(parsed, installation=installation)
    except InvalidBinding:
        return UNVERIFIED
    return parsed.address


def addresses(state: mls.GroupState) -> dict[str, str]:
    """Each member installation's checked address (do not change the dict: the last one is kept)."""
    last = _Remembered.last
    if last is not None and last[0] is state:
        return last[1]
    leaves = mls.member_leaf_extension(state, BINDING_EXTENSION)
    found = {installation: checked_address(binding, installation) for installation, binding in leaves.items()}
    _Remembered.last = (state, found)  # one assignment: threads may share it
    return found


class _Remembered:
    """The last state asked about, and its addresses: a catch-up asks once per payload, of the same state."""

    last: tuple[mls.GroupState, dict[str, str]] | None = None


def address_of(state: mls.GroupState, installation: str) -> str:
    return addresses(state).get(installation, UNVERIFIED)


def installations_of(state: mls.GroupState, address: str) -> list[str]:
    """The member installations whose checked binding names ``address``."""
    wanted = address.lower()
    return sorted(i for i, found in addresses(state).items() if found.lower() == wanted)
