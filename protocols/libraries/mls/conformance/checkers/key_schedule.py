"""key-schedule.json: every epoch of the chain, every secret, the exporter and the external key (section 8)."""

from __future__ import annotations

from typing import Any

import attrs

from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.messages import GroupContext, ProtocolVersion
from protocols.libraries.mls.schedule import EpochSecrets, next_epoch

KEYS = frozenset({"cipher_suite", "group_id", "initial_init_secret", "epochs"})
#: Every EpochSecrets attribute is named like the vector field that holds its value.
EPOCH_FIELDS = tuple(field.name for field in attrs.fields(EpochSecrets) if field.name != "suite")


def group_context(entry: dict[str, Any], epoch_index: int) -> GroupContext:
    epoch = entry["epochs"][epoch_index]
    return GroupContext(
        ProtocolVersion.MLS10,
        entry["cipher_suite"],
        h(entry["group_id"]),
        epoch_index,
        h(epoch["tree_hash"]),
        h(epoch["confirmed_transcript_hash"]),
        (),
    )


def check(entry: dict[str, Any]) -> list[Failure]:
    cs = suite(entry["cipher_suite"])
    init_secret = h(entry["initial_init_secret"])
    failures: list[Failure] = []
    for index, epoch in enumerate(entry["epochs"]):
        where = f"epochs[{index}]"
        context = group_context(entry, index)
        failures += compare(f"{where}.group_context", encode(context), h(epoch["group_context"]))
        step = next_epoch(cs, init_secret, h(epoch["commit_secret"]), h(epoch["psk_secret"]), context)
        failures += compare(f"{where}.joiner_secret", step.joiner_secret, h(epoch["joiner_secret"]))
        failures += compare(f"{where}.welcome_secret", step.welcome_secret, h(epoch["welcome_secret"]))
        for field in EPOCH_FIELDS:
            failures += compare(f"{where}.{field}", getattr(step.secrets, field), h(epoch[field]))
        failures += compare(f"{where}.external_pub", step.secrets.external_key_pair().public, h(epoch["external_pub"]))
        exporter = epoch["exporter"]
        # The label is a text string that happens to look like hex: only its text bytes give exporter.secret.
        exported = step.secrets.exporter(exporter["label"], h(exporter["context"]), exporter["length"])
        failures += compare(f"{where}.exporter.secret", exported, h(exporter["secret"]))
        init_secret = step.secrets.init_secret
    return failures
