"""The error codes of ``tessera serve``'s wire protocol: the one list the server and its clients share.

The server puts a member in every ``error`` frame it sends (its own refusals
through :class:`~protocols.libraries.delivery.frames.RequestError`, the
store's through the ``code`` of each :mod:`protocols.sovereign.errors`
class); a client reads the code back with :func:`read_code` and decides by
member.  docs/server-protocol.md's Errors table documents every member, and
tests/sovereign/test_error_codes.py keeps the two the same.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.StrEnum):
    """Why the server refused a request: the ``code`` of an ``error`` frame.

    A member is its wire text (a ``StrEnum``), so it goes into JSON as is and
    compares equal to the text a client reads.
    """

    # The frame itself, before any store work.
    MALFORMED_JSON = "malformed_json"
    MISSING_FIELD = "missing_field"
    BAD_FIELD = "bad_field"
    UNKNOWN_TYPE = "unknown_type"
    FRAME_TOO_LARGE = "frame_too_large"
    UNAUTHENTICATED = "unauthenticated"
    AUTH_FAILED = "auth_failed"
    ALREADY_AUTHENTICATED = "already_authenticated"
    # What the store refuses (protocols.sovereign.errors, one class each).
    NOT_A_MEMBER = "not_a_member"
    MALFORMED_PAYLOAD = "malformed_payload"
    WRONG_GROUP = "wrong_group"
    WELCOME_NEEDS_RECIPIENT = "welcome_needs_recipient"
    RECIPIENT_IS_MEMBER = "recipient_is_member"
    ALREADY_STORED = "already_stored"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    RATE_LIMITED = "rate_limited"
    STORAGE_FULL = "storage_full"
    TOO_MANY_GROUPS = "too_many_groups"
    TOO_MANY_INSTALLATIONS = "too_many_installations"
    INSTALLATION_BOUND = "installation_bound"
    BAD_ADDRESS = "bad_address"
    BAD_BINDING = "bad_binding"
    BINDING_TOO_LARGE = "binding_too_large"
    NO_WELCOME = "no_welcome"
    MALFORMED_CURSOR = "malformed_cursor"
    UNKNOWN_CURSOR = "unknown_cursor"
    BAD_LIMIT = "bad_limit"
    BAD_DIRECTION = "bad_direction"
    BAD_INSTALLATION = "bad_installation"
    BAD_GROUP_ID = "bad_group_id"
    INVALID_KEY_PACKAGE = "invalid_key_package"
    NO_KEY_PACKAGE = "no_key_package"
    BAD_IDS = "bad_ids"
    REFUSED = "refused"
    # The server, not the request.
    UNAVAILABLE = "unavailable"
    INTERNAL_ERROR = "internal_error"


def read_code(text: str) -> ErrorCode | str:
    """The member an ``error`` frame's ``code`` names, or the text itself when it names none (a newer server's
    code this client does not know: it stays a refusal, compared equal to no member)."""
    try:
        return ErrorCode(text)
    except ValueError:
        return text
