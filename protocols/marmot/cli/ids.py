"""The ids ``tessera marmot`` commands take, given whole or by a unique prefix (:mod:`jobs.id_prefix`).

Groups (``--group``: a group id, or a nostr group id it uses on relays),
messages (``react --to``, ``delete``: rumor ids within the group) and
invitations (``accept``, ``reject``: welcome ids).  Each is one range
query over the table's primary key (or the routes in protocol state).
"""

from __future__ import annotations

from collections.abc import Sequence

from core import contract
from core.state import ProtocolState
from jobs import hints
from jobs.id_prefix import IdRange, resolve
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.state.store import route_name, route_of

# The whole length of group, rumor and welcome ids in hex (32 bytes).
ID_HEX = 64

_GROUPS = "SELECT gid FROM marmot_groups WHERE gid >= ? AND gid < ? ORDER BY gid LIMIT ?"
_MESSAGES = (
    "SELECT rumor_id FROM marmot_messages WHERE gid = ? AND rumor_id >= ? AND rumor_id < ? ORDER BY rumor_id LIMIT ?"
)
_WELCOMES = (
    "SELECT welcome_id FROM marmot_welcomes WHERE welcome_id >= ? AND welcome_id < ? ORDER BY welcome_id LIMIT ?"
)


def group(app: contract.App, value: str) -> str:
    """The group id ``value`` names: a group id, a nostr group id it uses, or a unique prefix of either.

    A whole id (64 hex characters or more) that names no group is returned as it is, for the command to refuse
    in its own words.
    """
    text = value.strip().lower()
    with app.db.read():
        state = ProtocolState(app.db, PROTOCOL)
        routed = route_of(state, text)
        if routed is not None or len(text) >= ID_HEX:
            return routed or text

        def lookup(ids: IdRange, limit: int) -> Sequence[str]:
            found = [bytes(gid).hex() for (gid,) in app.db.all(_GROUPS, (*ids.bytes, limit))]
            routes = state.keys(route_name(ids.prefix))[:limit]
            found += [gid.decode() for gid in (state.get(name) for name in routes) if gid is not None]
            return list(dict.fromkeys(found))[:limit]

        return resolve(text, "group", lookup, hints.command("marmot", "groups"))


def message(app: contract.App, gid: str, value: str) -> str:
    """The id of the message (rumor) of group ``gid`` that ``value`` (its id, or a unique prefix) names."""

    def lookup(ids: IdRange, limit: int) -> Sequence[str]:
        with app.db.read():
            rows = app.db.all(_MESSAGES, (bytes.fromhex(gid), *ids.bytes, limit))
        return [bytes(rumor_id).hex() for (rumor_id,) in rows]

    listed_by = hints.command("marmot", "history", "--group", gid)
    return resolve(value, "message", lookup, listed_by, length=ID_HEX)


def welcome(app: contract.App, value: str) -> str:
    """The id of the invitation ``value`` (its welcome id, or a unique prefix) names."""

    def lookup(ids: IdRange, limit: int) -> Sequence[str]:
        with app.db.read():
            return [welcome_id for (welcome_id,) in app.db.all(_WELCOMES, (*ids.text, limit))]

    return resolve(value, "invitation", lookup, hints.command("marmot", "welcomes"), length=ID_HEX)
