"""The enums of seed 002, as the integers ``schema.sql`` checks."""

from __future__ import annotations

import enum


class Membership(enum.IntEnum):
    """Whether we take part in a group."""

    ALLOWED = 1  # we created it or accepted its welcome
    REJECTED = 2  # we declined the welcome (or left)
    PENDING = 3  # a welcome arrived; we have not decided


class IntentKind(enum.IntEnum):
    """What an intent asks for."""

    SEND_MESSAGE = 1
    ADD_MEMBERS = 2
    REMOVE_MEMBERS = 3
    KEY_UPDATE = 4
    # The node profile's changes of a libxmtp group, as libxmtp's own intents name them:
    METADATA_UPDATE = 5  # one attribute (name, description, image URL, ...) set
    ADMIN_LIST_UPDATE = 6  # an inbox made or unmade admin or super admin
    PERMISSION_UPDATE = 7  # one policy of the group's permissions replaced
    UPDATE_INSTALLATIONS = 8  # members' installations added or revoked since brought in line with the group

    @property
    def is_commit(self) -> bool:
        return self is not IntentKind.SEND_MESSAGE


class IntentState(enum.IntEnum):
    """Where an intent stands."""

    TO_SEND = 1  # never published, or to be rebuilt for a newer epoch
    PUBLISHED = 2  # the server holds it; not read back yet
    COMMITTED = 3  # read back: it took effect
    ERROR = 4  # given up, with a reason

    @property
    def final(self) -> bool:
        return self in (IntentState.COMMITTED, IntentState.ERROR)


class WelcomeState(enum.IntEnum):
    """An outbound welcome's progress."""

    PENDING = 1  # its commit is not confirmed yet
    READY_TO_SEND = 2
    SENT = 3


class MessageKind(enum.IntEnum):
    """What a row of the group's messages records."""

    APPLICATION = 1
    MEMBER_ADDED = 2
    MEMBER_REMOVED = 3
