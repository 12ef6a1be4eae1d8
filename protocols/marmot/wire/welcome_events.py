"""Welcome rumors: the unsigned kind-444 events that carry an MLS Welcome to a new member (MIP-02).

A welcome rumor is never signed (so a leaked one cannot be published); it
travels inside a NIP-59 gift wrap (:mod:`.gift_wrap`) addressed to the
invitee, whose seal is what authenticates the sender.  Its content is the
base64 of the MLSMessage-wrapped Welcome, and its tags are, in the order MDK
0.8.0 writes them: ``relays`` (where the group's messages are),
``e`` (the id of the KeyPackage event the invitee was added with),
``client`` and ``encoding`` ``base64``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence

from attrs import frozen

from core.errors import InvalidInput
from protocols.libraries.mls.errors import InvalidMessage
from protocols.libraries.mls.group.join import decode_welcome
from protocols.marmot.errors import InvalidRumor, MarmotError
from protocols.marmot.wire import rumors
from protocols.marmot.wire.key_package_events import CLIENT, check_relays, decode_content, single_tag, tags_named

__all__ = ["WELCOME_KIND", "InvalidWelcomeRumor", "WelcomeRumor", "parse_welcome_rumor", "welcome_rumor"]

WELCOME_KIND = 444

_HEX64 = re.compile(r"[0-9a-f]{64}")


class InvalidWelcomeRumor(MarmotError, InvalidInput):
    """A welcome rumor (or what was given to build one) was refused; ``field`` names the tag or field at fault."""

    def __init__(self, message: str, *, field: str):
        self.field = field
        super().__init__(message)


def _error(message: str, field: str) -> InvalidWelcomeRumor:
    return InvalidWelcomeRumor(message, field=field)


def _check_event_id(value: object) -> str:
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise _error("the KeyPackage event id (the e tag) must be 64 lowercase hex characters", "e")
    return value


def _check_welcome(data: bytes) -> bytes:
    try:
        decode_welcome(data)
    except InvalidMessage as exc:
        raise _error(f"the content is not an MLSMessage holding a Welcome: {exc}", "content") from exc
    return data


def welcome_rumor(
    welcome: bytes,
    *,
    sender_pubkey: str,
    key_package_event_id: str,
    relays: Sequence[str],
    created_at: int,
    client: str | None = CLIENT,
) -> dict:
    """The kind-444 rumor (with its id, without a signature) inviting the owner of a KeyPackage event.

    ``welcome`` is the MLSMessage-wrapped Welcome the engine's commit
    returned; ``relays`` tells the new member where the group's messages are.
    """
    _check_welcome(bytes(welcome))
    tags = [
        ["relays", *check_relays(relays, _error)],
        ["e", _check_event_id(key_package_event_id)],
        *([] if client is None else [["client", client]]),
        ["encoding", "base64"],
    ]
    content = base64.b64encode(welcome).decode()
    return rumors.make(sender_pubkey, created_at, content, kind=WELCOME_KIND, tags=tags)


@frozen
class WelcomeRumor:
    """What a welcome rumor says.

    Attributes:
        welcome: the MLSMessage-wrapped Welcome, for ``mls.join_from_welcome``.
        key_package_event_id: the KeyPackage event the invitee was added with.
        relays: where the group's messages are.
        sender: the rumor's pubkey (who invited; the gift wrap's seal authenticates it).
        rumor_id: the rumor's id.
        created_at: the rumor's timestamp.
    """

    welcome: bytes
    key_package_event_id: str
    relays: tuple[str, ...]
    sender: str
    rumor_id: str
    created_at: int


def _checked_rumor(rumor: dict | str | bytes) -> dict:
    if not isinstance(rumor, dict):
        try:
            rumor = json.loads(rumor)
        except (UnicodeDecodeError, ValueError):
            raise _error("the welcome rumor is not UTF-8 JSON", "rumor") from None
        if not isinstance(rumor, dict):
            raise _error("the welcome rumor is not a JSON object", "rumor")
    if "sig" in rumor:
        raise _error("a welcome rumor must not be signed (MIP-02); it travels sealed in a gift wrap", "sig")
    try:
        return rumors.decode(rumors.encode(rumor))
    except InvalidRumor as exc:
        raise _error(f"the welcome rumor is malformed: {exc}", "rumor") from exc


def parse_welcome_rumor(rumor: dict | str | bytes) -> WelcomeRumor:
    """Check a kind-444 rumor (as unwrapped from its gift wrap) and return what it says.

    Raises :class:`InvalidWelcomeRumor` naming the field: a wrong id, kind or
    signature, a missing or malformed ``e`` or ``relays`` tag, content that is
    not an MLSMessage Welcome in the encoding the ``encoding`` tag names.
    """
    checked = _checked_rumor(rumor)
    if checked["kind"] != WELCOME_KIND:
        raise _error(f"kind {checked['kind']} is not a welcome rumor ({WELCOME_KIND})", "kind")
    tags = checked["tags"]
    e_tags = tags_named(tags, "e")
    if len(e_tags) != 1 or len(e_tags[0]) < 2:
        raise _error(f"a welcome rumor needs exactly one e tag with the KeyPackage event id, found {len(e_tags)}", "e")
    relays = single_tag(tags, "relays", _error)
    candidates = decode_content(checked["content"], single_tag(tags, "encoding", _error), _error)
    return WelcomeRumor(
        welcome=_first_welcome(candidates),
        key_package_event_id=_check_event_id(e_tags[0][1]),
        relays=check_relays(relays or [], _error),
        sender=checked["pubkey"],
        rumor_id=checked["id"],
        created_at=checked["created_at"],
    )


def _first_welcome(candidates: list[bytes]) -> bytes:
    for data in candidates[:-1]:
        try:
            return _check_welcome(data)
        except InvalidWelcomeRumor:
            pass
    return _check_welcome(candidates[-1])
