"""Inner rumors: the unsigned Nostr events carried inside MLS application messages.

A rumor is the UTF-8 JSON of ``{id, pubkey, created_at, kind, tags,
content}`` without a signature; its id is the NIP-01 id of those fields.
The MLS layer authenticates the sender, and the plugin insists that the
rumor's pubkey is that sender's credential.
"""

from __future__ import annotations

import json
import re

from protocols.marmot.errors import InvalidEvent, InvalidRumor
from protocols.marmot.wire import nostr

DELETION_KIND = 5
REACTION_KIND = 7
CHAT_KIND = 9
RUMOR_KEYS = frozenset({"id", "pubkey", "created_at", "kind", "tags", "content"})
_HEX64 = re.compile(r"[0-9a-f]{64}")


def make(pubkey: str, created_at: int, content: str, *, kind: int = CHAT_KIND, tags: list | None = None) -> dict:
    rumor = {"pubkey": pubkey, "created_at": created_at, "kind": kind, "tags": tags or [], "content": content}
    return {"id": nostr.compute_event_id(rumor), **rumor}


def encode(rumor: dict) -> bytes:
    return json.dumps(rumor, separators=(",", ":"), ensure_ascii=False).encode()


def decode(plaintext: bytes) -> dict:
    """Parse and check a rumor; InvalidRumor says (briefly) what is wrong."""
    try:
        rumor = json.loads(plaintext.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise InvalidRumor("the application payload is not UTF-8 JSON") from None
    if not isinstance(rumor, dict):
        raise InvalidRumor("the rumor is not a JSON object")
    rumor = {k: v for k, v in rumor.items() if k != "sig"}  # a stray signature is ignored, never trusted
    if set(rumor) != RUMOR_KEYS:
        raise InvalidRumor("the rumor must have exactly id, pubkey, created_at, kind, tags and content")
    try:
        expected = nostr.compute_event_id(rumor)
    except InvalidEvent as exc:
        raise InvalidRumor(f"rumor field {exc.field or '?'} is malformed") from None
    if rumor["id"] != expected:
        raise InvalidRumor("the rumor id does not match its content")
    return rumor


def deletion_targets(rumor: dict) -> list[str]:
    """Rumor ids a kind-5 deletion names in its ``e`` tags."""
    return [tag[1] for tag in rumor["tags"] if len(tag) > 1 and tag[0] == "e" and _HEX64.fullmatch(tag[1])]
