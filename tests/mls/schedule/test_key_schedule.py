"""Key schedule behaviour beyond the vectors: suite checks, zero secrets, the exporter's limits, reprs."""

from __future__ import annotations

import attrs
import pytest

from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.errors import InvalidArgument
from protocols.libraries.mls.messages import GroupContext, ProtocolVersion
from protocols.libraries.mls.schedule import (
    EpochSecrets,
    encode_group_context,
    joiner_secret,
    mls_exporter,
    next_epoch,
    welcome_key_nonce,
    zero_secret,
)

CS = suite(1)
CONTEXT = GroupContext(ProtocolVersion.MLS10, 1, b"group", 3, b"tree hash", b"transcript", ())
INIT = bytes(range(32))
SECRET_NAMES = [field.name for field in attrs.fields(EpochSecrets) if field.name != "suite"]


def _epoch() -> EpochSecrets:
    return next_epoch(CS, INIT, zero_secret(CS), zero_secret(CS), CONTEXT).secrets


@pytest.mark.parametrize("suite_id", range(1, 8))
def test_zero_secrets_are_nh_zero_bytes(suite_id: int) -> None:
    cs = suite(suite_id)
    assert zero_secret(cs) == bytes(cs.nh)


def test_a_group_context_of_another_suite_is_refused() -> None:
    other = GroupContext(ProtocolVersion.MLS10, 2, b"group", 3, b"tree hash", b"transcript", ())
    with pytest.raises(InvalidArgument):
        encode_group_context(CS, other)
    with pytest.raises(InvalidArgument):
        joiner_secret(CS, INIT, zero_secret(CS), other)


def test_every_input_changes_every_secret() -> None:
    base = next_epoch(CS, INIT, zero_secret(CS), zero_secret(CS), CONTEXT)
    zero, one = zero_secret(CS), b"\x01" * 32
    variants = [
        next_epoch(CS, bytes(32), zero, zero, CONTEXT),
        next_epoch(CS, INIT, one, zero, CONTEXT),
        next_epoch(CS, INIT, zero, one, CONTEXT),
        next_epoch(CS, INIT, zero, zero, attrs.evolve(CONTEXT, epoch=4)),
    ]
    for variant in variants:
        assert variant.secrets.init_secret != base.secrets.init_secret
        assert variant.secrets.encryption_secret != base.secrets.encryption_secret
    # psk_secret enters after the joiner secret, so only it leaves joiner_secret unchanged.
    assert variants[2].joiner_secret == base.joiner_secret
    assert variants[2].welcome_secret != base.welcome_secret


def test_epoch_secrets_are_all_distinct() -> None:
    secrets = _epoch()
    values = [getattr(secrets, name) for name in SECRET_NAMES]
    assert len(set(values)) == len(values) == 9
    assert all(len(value) == CS.nh for value in values)


def test_exporter_lengths_and_limits() -> None:
    secrets = _epoch()
    assert len(secrets.exporter("label", b"context", 0)) == 0
    assert len(secrets.exporter(b"\xff\x00 bytes label", b"", 255 * CS.nh)) == 255 * CS.nh
    assert secrets.exporter("a", b"", 32) != secrets.exporter("b", b"", 32)
    assert secrets.exporter("a", b"", 32) == mls_exporter(CS, secrets.exporter_secret, "a", b"", 32)
    with pytest.raises(InvalidArgument):
        secrets.exporter("label", b"", 255 * CS.nh + 1)


def test_welcome_key_and_nonce_have_the_aead_sizes() -> None:
    for suite_id in range(1, 8):
        cs = suite(suite_id)
        key, nonce = welcome_key_nonce(cs, bytes(cs.nh))
        assert (len(key), len(nonce)) == (cs.nk, cs.nn)


def test_no_repr_shows_a_secret() -> None:
    step = next_epoch(CS, INIT, zero_secret(CS), zero_secret(CS), CONTEXT)
    secrets = [step.joiner_secret, step.welcome_secret]
    secrets += [getattr(step.secrets, name) for name in SECRET_NAMES]
    for text in (repr(step), repr(step.secrets), str(step.secrets)):
        for secret in secrets:
            assert secret.hex() not in text and repr(secret)[2:-1] not in text, text
    assert repr(step.secrets) == "EpochSecrets(suite=1)"
