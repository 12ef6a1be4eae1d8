"""The joiner's side of the key schedule on RFC 9420 welcome.json, all seven suites.

A new member decrypts its GroupSecrets, opens the GroupInfo with the
welcome key and nonce, runs the key schedule from the ``joiner_secret`` with
no PSKs, and checks the GroupInfo's confirmation tag with the confirmation
key it derived.  (The GroupInfo signature belongs to the Welcome processing,
not to the key schedule, and is not checked here.)
"""

from __future__ import annotations

from typing import Any

import pytest

from protocols.mls.codec import decode, encode
from protocols.mls.crypto import suite
from protocols.mls.crypto.labels import decrypt_with_label, make_key_package_ref
from protocols.mls.messages import GroupInfo, GroupSecrets, KeyPackage, MLSMessage, Welcome
from protocols.mls.schedule import (
    epoch_secrets,
    verify_confirmation_tag,
    welcome_key_nonce,
    welcome_secret,
    zero_secret,
)
from tests.mls.crypto._vectors import h, mls

VECTORS = mls("welcome")


@pytest.mark.parametrize("vector", VECTORS, ids=[f"suite-{v['cipher_suite']}" for v in VECTORS])
def test_joiner_secret_opens_the_group_info_and_confirms_the_epoch(vector: dict[str, Any]) -> None:
    cs = suite(vector["cipher_suite"])
    welcome = decode(MLSMessage, h(vector["welcome"])).message
    key_package = decode(MLSMessage, h(vector["key_package"])).message
    assert isinstance(welcome, Welcome) and isinstance(key_package, KeyPackage)
    ref = make_key_package_ref(cs, encode(key_package))
    (mine,) = [entry for entry in welcome.secrets if entry.new_member == ref]
    sealed = mine.encrypted_group_secrets
    group_secrets = decode(
        GroupSecrets,
        decrypt_with_label(
            cs, h(vector["init_priv"]), "Welcome", welcome.encrypted_group_info, sealed.kem_output, sealed.ciphertext
        ),
    )
    assert group_secrets.psks == ()
    psk = zero_secret(cs)

    key, nonce = welcome_key_nonce(cs, welcome_secret(cs, group_secrets.joiner_secret, psk))
    group_info = decode(GroupInfo, cs.open(key, nonce, b"", welcome.encrypted_group_info))
    context = group_info.group_context
    secrets = epoch_secrets(cs, group_secrets.joiner_secret, psk, context)
    verify_confirmation_tag(
        cs, secrets.confirmation_key, context.confirmed_transcript_hash, group_info.confirmation_tag
    )
