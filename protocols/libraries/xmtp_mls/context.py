"""A joined group's XMTP context: the four libxmtp extensions of its MLS GroupContext, decoded.

libxmtp keeps a group's name, description, admins, policies, creator and
membership map nowhere but in these extensions (see docs/xmtp-content.md), so
they are read from the MLS state whenever asked; the state is their one home.
"""

from __future__ import annotations

from protocols.libraries.mls.group.state import GroupState as MlsGroupState
from protocols.libraries.xmtp_content.errors import ContentError
from protocols.libraries.xmtp_content.group_state import GroupState

from .errors import InvalidGroupContext


def group_context(state: MlsGroupState) -> GroupState:
    """The XMTP group state the MLS state's GroupContext carries (:class:`InvalidGroupContext` if it does not)."""
    extensions = {extension.extension_type: bytes(extension.extension_data) for extension in state.context.extensions}
    try:
        return GroupState.from_extensions(extensions)
    except ContentError as error:
        raise InvalidGroupContext(
            f"group {bytes(state.group_id).hex()} at epoch {state.epoch} is not a libxmtp group: {error}"
        ) from None
