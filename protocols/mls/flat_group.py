"""Group creation and exporter secrets."""

from __future__ import annotations

from . import key_schedule as ks
from . import suite
from .credentials import Identity, make_leaf, normalize_credential
from .errors import InvalidArgument, WrongEpoch
from .state import DEFAULT_MAX_PAST_EPOCHS, GroupState, check_max_past_epochs, context_of, epoch_fields, make_state


def create_group(
    identity: Identity,
    group_id: bytes,
    *,
    admins: set[str] | None = None,
    max_past_epochs: int = DEFAULT_MAX_PAST_EPOCHS,
    rng: suite.Rng | None = None,
) -> GroupState:
    """A one-member group at epoch 0 (RFC 9420 section 11: random init_secret, zero commit_secret).

    ``admins`` defaults to ``{creator}``; it may name credentials that are not
    members yet.
    """
    if not isinstance(group_id, (bytes, bytearray)) or not 0 < len(group_id) <= 255:
        raise InvalidArgument("group_id must be 1..255 bytes")
    check_max_past_epochs(max_past_epochs)
    admin_set = frozenset(normalize_credential(a) for a in (admins if admins is not None else {identity.credential}))
    hpke_private, hpke_public = suite.hpke_key_pair(rng)
    roster = (make_leaf(identity.credential, identity.signing_private, hpke_public),)
    ctx = context_of(bytes(group_id), 0, roster, b"", admin_set).encode()
    secrets = ks.derive_epoch(suite.random_bytes(rng, suite.NH), ks.ZERO, ctx)
    # Epoch 0 has no commit; its confirmation tag covers the empty transcript.
    tag = ks.confirmation_tag(secrets.confirmation_key, b"")
    return make_state(
        group_id=bytes(group_id),
        epoch=0,
        roster=roster,
        admins=admin_set,
        own_leaf=0,
        own_hpke_private=hpke_private,
        own_signing_private=identity.signing_private,
        confirmed_transcript_hash=b"",
        interim_transcript_hash=ks.next_interim_transcript_hash(b"", tag),
        **epoch_fields(secrets, 1),
        max_past_epochs=max_past_epochs,
    )


def exporter_secret(
    state: GroupState,
    label: str = "marmot",
    context: bytes = b"group-event",
    length: int = 32,
    *,
    epoch: int | None = None,
) -> bytes:
    """MLS-Exporter(label, context, length) of the current epoch or a retained past one."""
    if not 0 < length <= 255 * suite.NH:
        raise InvalidArgument("exporter length out of range")
    secret: bytes | None
    if epoch is None or epoch == state.epoch:
        secret = state.exporter_secret
    else:
        secret = next((p.exporter_secret for p in state.past_epochs if p.epoch == epoch), None)
        if secret is None:
            raise WrongEpoch(epoch, state.epoch, "epoch is not current and not retained")
    return ks.mls_exporter(secret, label, context, length)
