"""Welcome messages (modelled on RFC 9420 section 12.4.3).

Wire layout (engine format)::

    uint16 format_version; uint8 kind = welcome;
    opaque key_package_ref<V>;
    opaque kem_output<V>; opaque encrypted_group_secrets<V>;
    opaque encrypted_group_info<V>;

``GroupSecrets = {opaque joiner_secret<V>}`` is encrypted to the key
package's init key with EncryptWithLabel(label "Welcome", context =
encrypted_group_info), exactly as RFC 9420 does.  The GroupInfo is
AES-GCM encrypted with the welcome key/nonce derived from welcome_secret::

    GroupInfo = GroupContext group_context; optional<LeafNode> roster<V>;
                opaque confirmation_tag<V>; uint32 signer; opaque signature<V>;

signed by the committer (SignWithLabel "GroupInfoTBS" over everything
before the signature).  The roster travels inside the GroupInfo, as the
RFC's ratchet_tree extension would.
"""

from __future__ import annotations

import hmac

from . import key_schedule as ks
from . import roster as rosters
from . import suite, wire
from .credentials import SOURCE_COMMIT, Identity, KeyPackage, KeyPackagePrivate, verify_leaf
from .errors import ConfirmationMismatch, InvalidArgument, InvalidMessage, InvalidSignature
from .key_schedule import GroupContext
from .labels import decrypt_with_label, encrypt_with_label, sign_with_label, verify_with_label
from .proposals import ADMINS_EXTENSION, decode_admins
from .state import DEFAULT_MAX_PAST_EPOCHS, GroupState, check_max_past_epochs, epoch_fields, make_state
from .tls import Reader, Writer

WELCOME_LABEL = "Welcome"
GROUP_INFO_LABEL = "GroupInfoTBS"


def _group_info_tbs(group_context: bytes, roster: rosters.Roster, tag: bytes, signer: int) -> bytes:
    return Writer().raw(group_context).raw(rosters.encode_roster(roster)).opaque(tag).u32(signer).bytes()


def build_welcomes(
    new_state: GroupState, added: list[KeyPackage], secrets: ks.EpochSecrets, tag: bytes, rng
) -> dict[str, bytes]:
    """One Welcome per added key package, keyed by credential."""
    if not added:
        return {}
    tbs = _group_info_tbs(new_state.group_context, new_state.roster, tag, new_state.own_leaf)
    group_info = Writer().raw(tbs).opaque(sign_with_label(new_state.own_signing_private, GROUP_INFO_LABEL, tbs)).bytes()
    key, nonce = ks.welcome_key_nonce(secrets.welcome_secret)
    encrypted_info = suite.aead_seal(key, nonce, group_info, b"")
    group_secrets = Writer().opaque(secrets.joiner_secret).bytes()
    welcomes = {}
    for kp in added:
        kem_output, ciphertext = encrypt_with_label(kp.init_key, WELCOME_LABEL, encrypted_info, group_secrets, rng)
        w = wire.writer(wire.KIND_WELCOME).opaque(kp.ref()).opaque(kem_output).opaque(ciphertext)
        welcomes[kp.credential] = w.opaque(encrypted_info).bytes()
    return welcomes


def _open_group_secrets(kp_private: KeyPackagePrivate, welcome: bytes) -> tuple[bytes, bytes]:
    """``(joiner_secret, encrypted_group_info)`` of a Welcome addressed to us."""
    r = wire.reader(welcome, wire.KIND_WELCOME, InvalidMessage)
    ref, kem_output, ciphertext, encrypted_info = r.opaque(), r.opaque(), r.opaque(), r.opaque()
    r.done()
    if ref != kp_private.key_package_ref:
        raise InvalidMessage("this welcome is for a different key package")
    gs = Reader(decrypt_with_label(kp_private.init_private, WELCOME_LABEL, encrypted_info, kem_output, ciphertext))
    joiner = gs.fixed(suite.NH)
    gs.done()
    return joiner, encrypted_info


def _parse_group_info(data: bytes):
    r = Reader(data, InvalidMessage)
    ctx = ks.GroupContext.decode_from(r)
    roster = rosters.decode_roster(r)
    tag, signer, signature = r.fixed(suite.NH), r.u32(), r.opaque()
    r.done()
    return ctx, roster, tag, signer, signature


def _admins_of(ctx: ks.GroupContext) -> frozenset[str]:
    if len(ctx.extensions) != 1 or ctx.extensions[0][0] != ADMINS_EXTENSION:
        raise InvalidMessage("group context must carry exactly the admins extension")
    r = Reader(ctx.extensions[0][1], InvalidMessage)
    admins = decode_admins(r)
    r.done()
    return admins


def _verify_roster(ctx: ks.GroupContext, roster: rosters.Roster) -> None:
    """Tree hash, leaf signatures and unique credentials."""
    if ctx.version != 1 or ctx.cipher_suite != suite.CIPHER_SUITE:
        raise InvalidMessage("unsupported protocol version or cipher suite")
    if rosters.tree_hash(roster) != ctx.tree_hash:
        raise InvalidMessage("roster does not match the group context's tree hash")
    seen = set()
    for i, leaf in rosters.members(roster):
        in_group = leaf.source == SOURCE_COMMIT
        verify_leaf(leaf, group_id=ctx.group_id if in_group else None, leaf_index=i if in_group else None)
        if leaf.credential in seen:
            raise InvalidMessage("a credential appears twice in the roster")
        seen.add(leaf.credential)


def _verify_group_info(ctx: GroupContext, roster: rosters.Roster, tag: bytes, signer: int, signature: bytes) -> None:
    leaf = rosters.member_at(roster, signer)
    if leaf is None:
        raise InvalidMessage("group info signer is not a member")
    tbs = _group_info_tbs(ctx.encode(), roster, tag, signer)
    if not verify_with_label(leaf.signature_key, GROUP_INFO_LABEL, tbs, signature):
        raise InvalidSignature("group info signature does not verify")


def _own_leaf(roster: rosters.Roster, identity: Identity, kp_private: KeyPackagePrivate) -> int:
    enc_key = suite.hpke_public_key(kp_private.encryption_private)
    for i, leaf in rosters.members(roster):
        if leaf.encryption_key == enc_key:
            if leaf.credential != identity.credential or leaf.signature_key != identity.signing_public:
                raise InvalidArgument("the key package was not made with this identity")
            return i
    raise InvalidMessage("our leaf is not in the welcomed roster")


def join_from_welcome(
    identity: Identity, kp_private: KeyPackagePrivate, welcome: bytes, *, max_past_epochs: int = DEFAULT_MAX_PAST_EPOCHS
) -> GroupState:
    """Join a group from a Welcome addressed to our key package."""
    check_max_past_epochs(max_past_epochs)
    joiner, encrypted_info = _open_group_secrets(kp_private, welcome)
    key, nonce = ks.welcome_key_nonce(ks.welcome_secret(joiner))
    ctx, roster, tag, signer, signature = _parse_group_info(suite.aead_open(key, nonce, encrypted_info, b""))
    admins = _admins_of(ctx)
    _verify_roster(ctx, roster)
    _verify_group_info(ctx, roster, tag, signer, signature)
    own = _own_leaf(roster, identity, kp_private)
    secrets = ks.from_joiner(joiner, ctx.encode())
    if not hmac.compare_digest(ks.confirmation_tag(secrets.confirmation_key, ctx.confirmed_transcript_hash), tag):
        raise ConfirmationMismatch("welcome confirmation tag does not match")
    state = make_state(
        group_id=ctx.group_id,
        epoch=ctx.epoch,
        roster=roster,
        admins=admins,
        own_leaf=own,
        own_hpke_private=kp_private.encryption_private,
        own_signing_private=identity.signing_private,
        confirmed_transcript_hash=ctx.confirmed_transcript_hash,
        interim_transcript_hash=ks.next_interim_transcript_hash(ctx.confirmed_transcript_hash, tag),
        **epoch_fields(secrets, len(roster)),
        max_past_epochs=max_past_epochs,
    )
    if state.group_context != ctx.encode():
        raise InvalidMessage("group context is not in canonical form")
    return state
