"""passive-client-*.json: join a real group from its Welcome and follow its commits (RFC 9420 sections 12.4, 12.4.3).

Other implementations produced these groups; a passive member joins with the
given KeyPackage's private keys, processes each epoch's proposals and commit,
and must reach the same epoch authenticator as the group at every epoch.
"""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.errors import MlsError
from protocols.libraries.mls.group.join import join_from_welcome
from protocols.libraries.mls.group.key_packages import KeyPackageSecrets
from protocols.libraries.mls.group.process import process
from protocols.libraries.mls.group.results import CommitMessage
from protocols.libraries.mls.messages import KeyPackage, MLSMessage, RatchetTree

KEYS = frozenset(
    {
        "cipher_suite",
        "key_package",
        "signature_priv",
        "encryption_priv",
        "init_priv",
        "welcome",
        "initial_epoch_authenticator",
        "epochs",
    }
)
OPTIONAL_KEYS = frozenset({"ratchet_tree", "external_psks"})


def check(entry: dict[str, Any]) -> list[Failure]:
    key_package = decode(MLSMessage, h(entry["key_package"])).message
    if not isinstance(key_package, KeyPackage):
        return [Failure("key_package", "is not a KeyPackage MLSMessage")]
    secrets = KeyPackageSecrets(h(entry["init_priv"]), h(entry["encryption_priv"]), h(entry["signature_priv"]))
    tree = decode(RatchetTree, h(entry["ratchet_tree"])) if entry.get("ratchet_tree") else None
    psks = {h(psk["psk_id"]): h(psk["psk"]) for psk in entry.get("external_psks") or ()}
    state = join_from_welcome(h(entry["welcome"]), key_package, secrets, ratchet_tree=tree, external_psks=psks)
    failures = compare(
        "initial_epoch_authenticator", state.epoch_authenticator, h(entry["initial_epoch_authenticator"])
    )
    for number, epoch in enumerate(entry["epochs"]):
        where = f"epochs[{number}]"
        try:
            for index, proposal in enumerate(epoch["proposals"]):
                state = process(state, h(proposal)).new_state
                where = f"epochs[{number}].proposals[{index}]"
            where = f"epochs[{number}].commit"
            result = process(state, h(epoch["commit"]))
        except MlsError as error:
            return [*failures, Failure(where, f"{type(error).__name__}: {error}")]
        if not isinstance(result, CommitMessage):
            return [*failures, Failure(where, f"is a {type(result).__name__}, not a commit")]
        state = result.new_state
        failures += compare(
            f"epochs[{number}].epoch_authenticator", state.epoch_authenticator, h(epoch["epoch_authenticator"])
        )
    return failures
