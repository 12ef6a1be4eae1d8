"""welcome.json: a new member opens a Welcome and checks its GroupInfo (RFC 9420 §12.4.3.1).

Per entry: the KeyPackage's reference finds our GroupSecrets, ``init_priv``
opens them, the joiner secret (and no PSKs) opens the GroupInfo, whose
signature must verify under ``signer_pub`` and whose confirmation tag must be
the one the key schedule gives for its GroupContext.
"""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.errors import InvalidSignature
from protocols.libraries.mls.group.group_info import verify_group_info
from protocols.libraries.mls.group.key_packages import key_package_ref
from protocols.libraries.mls.group.welcome import open_welcome
from protocols.libraries.mls.messages import KeyPackage, MLSMessage, Welcome
from protocols.libraries.mls.schedule import confirmation_tag, epoch_secrets, zero_secret

KEYS = frozenset({"cipher_suite", "init_priv", "key_package", "signer_pub", "welcome"})


def check(entry: dict[str, Any]) -> list[Failure]:
    cs = suite(entry["cipher_suite"])
    key_package = decode(MLSMessage, h(entry["key_package"])).message
    welcome = decode(MLSMessage, h(entry["welcome"])).message
    if not isinstance(key_package, KeyPackage) or not isinstance(welcome, Welcome):
        return [Failure("key_package/welcome", "expected an MLSMessage KeyPackage and an MLSMessage Welcome")]
    opened = open_welcome(cs, welcome, key_package_ref(cs, key_package), h(entry["init_priv"]))
    group_info = opened.group_info
    failures: list[Failure] = []
    try:
        verify_group_info(cs, group_info, h(entry["signer_pub"]))
    except InvalidSignature as error:
        failures.append(Failure("welcome.group_info.signature", str(error)))
    context = group_info.group_context
    secrets = epoch_secrets(cs, opened.group_secrets.joiner_secret, zero_secret(cs), context)
    expected_tag = confirmation_tag(cs, secrets.confirmation_key, context.confirmed_transcript_hash)
    return failures + compare("welcome.group_info.confirmation_tag", group_info.confirmation_tag, expected_tag)
