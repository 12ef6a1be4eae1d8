"""What came in, as the tick records it: one line (and one JSON object) per fact worth telling a person.

:class:`Arrivals` subscribes to the runtime's after-commit notifications,
so it reports only what is durably stored: messages, reactions and
deletions, commits applied (and whether they removed us), proposals,
rollbacks, events that failed, and invitations.  Our own messages coming
back from relays are not news and are left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core import contract
from core.records import StoredEvent
from jobs import hints
from jobs.output import plural
from protocols.marmot import facts
from protocols.marmot.cli.support import short_key
from protocols.marmot.facts import PROTOCOL
from protocols.marmot.wire import rumors

Line = Callable[[dict[str, Any]], str]


def _rumor(data: dict[str, Any]) -> str:
    rumor = data["rumor"]
    who, kind = short_key(rumor["pubkey"]), rumor["kind"]
    if kind == rumors.CHAT_KIND:
        return f"{who}: {rumor['content']}  (message {rumor['id']})"
    target = next((tag[1] for tag in rumor["tags"] if len(tag) > 1 and tag[0] == "e"), "?")
    if kind == rumors.REACTION_KIND:
        return f"{who} reacted {rumor['content']} to {target}"
    return f"{who} sent a kind-{kind} rumor {rumor['id']}"


def _deletion(data: dict[str, Any]) -> str:
    targets = ", ".join(f"{t['id']} ({t['effect']})" for t in data["targets"])
    return f"{short_key(data['pubkey'])} deleted {targets}"


def _commit(data: dict[str, Any]) -> str:
    changes = [f"added {short_key(k)}" for k in data["added"]] + [f"removed {short_key(k)}" for k in data["removed"]]
    changes += [f"new keys for {short_key(k)}" for k in data["updated"]] if data["updated"] else []
    said = f"epoch {data['epoch']} -> {data['new_epoch']} by {short_key(data['committer'])}"
    said += f": {', '.join(changes)}" if changes else ""
    if data["we_were_removed"]:
        said += "; we were removed: the group is read-only now"
    return said + f" ({plural(data['members'], 'member')})"


def _proposal(data: dict[str, Any]) -> str:
    return f"{short_key(data['proposer'])} proposes {data['kind']} ({data['action']})"


def _failed(data: dict[str, Any]) -> str:
    return f"event {data['outer_id']} failed: {data['reason']} ({data['detail']})"


def _rolled_back(data: dict[str, Any]) -> str:
    return f"epoch {data['epoch']} rolled back: commit {data['winner']['outer_id']} won the race"


def _invitation(data: dict[str, Any]) -> str:
    name = f" {data['name']!r}" if data["name"] else ""
    return (
        f"invitation {data['welcome_id']} from {short_key(data['sender'])} to group{name} {data['group']} "
        f"({plural(data['members'], 'member')}): `{hints.command('marmot', 'accept', data['welcome_id'])}` joins it"
    )


# Fact type -> how to say it; the group's id starts every group line.
_GROUP_LINES: dict[str, Line] = {
    facts.RUMOR_RECEIVED: _rumor,
    facts.DELETION_RECEIVED: _deletion,
    facts.COMMIT_APPLIED: _commit,
    facts.PROPOSAL_RECEIVED: _proposal,
    facts.OUTER_FAILED: _failed,
    facts.EPOCH_ROLLED_BACK: _rolled_back,
}
_ACCOUNT_LINES: dict[str, Line] = {facts.WELCOME_RECEIVED: _invitation}


class Arrivals:
    """Collects (and hands to ``on_line``) what the runtime commits from now until :meth:`stop`."""

    def __init__(
        self,
        runtime: contract.Runtime,
        on_line: Callable[[str], None] | None = None,
        on_item: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.items: list[dict[str, Any]] = []
        self.lines: list[str] = []
        self._on_line = on_line
        self._on_item = on_item  # `listen --json`: each item as it comes
        self._stops = [
            runtime.subscribe(kind, self._seen, protocol=PROTOCOL) for kind in (*_GROUP_LINES, *_ACCOUNT_LINES)
        ]

    def _seen(self, event: StoredEvent) -> None:
        group_line = _GROUP_LINES.get(event.type)
        if group_line is not None:
            line = f"[{event.partition_key[:12]}] {group_line(event.data)}"
        else:
            line = _ACCOUNT_LINES[event.type](event.data)
        self.items.append({"type": event.type, "partition": event.partition_key, "data": event.data})
        self.lines.append(line)
        if self._on_line is not None:
            self._on_line(line)
        if self._on_item is not None:
            self._on_item(self.items[-1])

    def stop(self) -> None:
        """Stop listening to the runtime."""
        for stop in self._stops:
            stop()
        self._stops = []
