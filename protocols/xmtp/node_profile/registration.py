"""Our inbox and KeyPackages on the node: made in one transaction, published between transactions.

``identity new --node`` makes the account (or takes the one given), this
installation's key and the inbox id as libxmtp derives it (nonce 0), and a
KeyPackage in libxmtp's form; ``identity add-installation`` does the same for an
inbox the account has already.  :func:`register` then publishes the identity
update that creates the inbox (or adds this installation to it) and uploads the
KeyPackage.  Whether the update is on the node is read from the node itself
(our own inbox's updates, verified and kept like anyone's), so a crash between
the publish and its record never publishes it twice.

The node keeps one KeyPackage per installation, the last uploaded, and libxmtp
makes every one last-resort (reused by every inviter until replaced).  So the
stock is one *current* KeyPackage: the newest uploaded.  A welcome that used a
KeyPackage deletes its private keys once the group is kept (forward secrecy);
when it was the current one the key-package job makes and uploads a fresh one.
Older ones stay until a welcome uses them (an inviter may have fetched one just
before it was replaced) or until their lifetime (``not_after``) ended longer ago
than the ``[xmtp] key_package_grace_s`` setting: an inviter refuses an expired
KeyPackage, so only a welcome sealed before its end could still need it.  A
current one past its lifetime is replaced by a fresh one.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from core import contract
from core.records import Result
from protocols.libraries import mls
from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.messages import KeyPackage
from protocols.libraries.mls.messages.nodes import KeyPackageOrigin
from protocols.libraries.xmtp_identity.authoring import Account, add_installation_update, create_inbox_update
from protocols.libraries.xmtp_identity.ethereum import SECP256K1_ORDER
from protocols.libraries.xmtp_mls import new_key_package
from protocols.xmtp import facts
from protocols.xmtp.errors import IdentityExists, InvalidKey, ServiceRefused, ServiceUnavailable
from protocols.xmtp.node_profile import identity_updates
from protocols.xmtp.node_profile.inbox import FIRST_NONCE, Inbox
from protocols.xmtp.settings import KEY_PACKAGE_GRACE_S
from protocols.xmtp.state import Vault
from protocols.xmtp.transport.node import NodeService

log = logging.getLogger("tessera.xmtp.keypackages")

#: The core KV flag naming our installation once the node lists it in our inbox (read from the node until then).
_REGISTERED = "xmtp.inbox_registered"
_PUBLISHED = "SELECT ref, published_at_ns FROM xmtp_published_key_packages"
_RECORD_PUBLISHED = "INSERT INTO xmtp_published_key_packages(ref, published_at_ns) VALUES (?, ?) ON CONFLICT DO NOTHING"
_LAST_PUBLISHED = "SELECT max(published_at_ns) FROM xmtp_published_key_packages"


def account_from_hex(text: str | None) -> Account:
    """The account of a 64-hex secp256k1 secret, or a new one when none is given."""
    if not text:
        return Account(os.urandom(32))
    try:
        secret = bytes.fromhex(text.removeprefix("0x"))
    except ValueError:
        raise InvalidKey("an account key is 64 hex digits (32 bytes)") from None
    if len(secret) != 32 or not 0 < int.from_bytes(secret, "big") < SECP256K1_ORDER:
        raise InvalidKey("an account key is 32 bytes, non-zero and below the secp256k1 group order (64 hex digits)")
    return Account(secret)


def command_inbox_new(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """This database becomes an installation of an inbox on the node ``node``: ``account_key`` (hex; a new
    account when absent), and ``inbox_id`` when the account's inbox exists already (``add-installation``)."""
    vault = Vault.in_context(ctx)
    if vault.has_identity():
        raise IdentityExists("this database has an XMTP identity already (`tessera xmtp whoami`); use another database")
    account = account_from_hex(params.get("account_key"))
    existing = params.get("inbox_id")
    inbox = Inbox(
        account.private_key,
        os.urandom(32),
        existing or account.inbox_id(FIRST_NONCE),
        str(params["node"]),
        joins_existing=bool(existing),
    )
    kept = _new_key_package(vault, inbox)
    event = facts.identity_created(inbox.address, inbox.installation_id, inbox.node, ctx.now_ms)
    return Result(events=[event], intents=[vault.inbox_intent(inbox), kept])


def _new_key_package(vault: Vault, inbox: Inbox) -> Any:
    """The intent keeping a fresh KeyPackage of libxmtp's form, its private keys sealed erasably."""
    _, private = new_key_package(inbox.installation_seed, inbox.inbox_id)
    return vault.key_package_intent(private, mls.key_package_reference(private.key_package))


def command_top_up(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """A fresh KeyPackage when none waits to be uploaded and the current one was used up (or none was made)."""
    vault = Vault.in_context(ctx)
    if not needs_fresh_key_package(ctx.db, vault, ctx.now_ms // 1000):
        return Result(duplicate=True)
    kept = _new_key_package(vault, vault.inbox())
    return Result(intents=[kept])


def needs_fresh_key_package(db: contract.Database, vault: Vault, now_s: int | None = None) -> bool:
    """Whether a fresh KeyPackage is wanted: none waits to be uploaded, and the current one (the newest
    uploaded) was used, deleted, or, given ``now_s``, is past its lifetime (inviters refuse it)."""
    held = set(vault.key_package_refs())
    published = {bytes(ref): int(at) for ref, at in db.all(_PUBLISHED)}
    if held - set(published):
        return False  # one waits to be uploaded
    current = max(published, key=lambda ref: published[ref], default=None)
    if current is None or current not in held:
        return True
    private = vault.key_package(current)
    return now_s is not None and private is not None and not_after(private) < now_s


def not_after(private: mls.KeyPackagePrivate) -> int:
    """The end of a KeyPackage's lifetime, in seconds since the epoch."""
    source = private.key_package.leaf_node.leaf_node_source
    assert isinstance(source, KeyPackageOrigin)  # a KeyPackage's leaf always carries its lifetime
    return int(source.lifetime.not_after)


def command_forget_expired(ctx: contract.Context, params: dict[str, Any]) -> Result:
    """Delete the private keys of every KeyPackage of ours whose lifetime ended more than ``grace_s`` seconds
    ago, erasably as a used one's are: an inviter refuses an expired KeyPackage, so only a welcome sealed to
    it before its end could still need it, and the grace is how long such a welcome is waited for."""
    vault = Vault.in_context(ctx)
    deadline = ctx.now_ms // 1000 - int(params["grace_s"])
    expired = [ref for ref, private in vault.key_packages().items() if not_after(private) < deadline]
    if not expired:
        return Result(duplicate=True)
    return Result(intents=[vault.key_package_intent(None, ref) for ref in expired])


def register(runtime: contract.Runtime, node: NodeService) -> int:
    """Publish our identity update if the node lacks it, then upload the KeyPackages it has not had;
    returns how many KeyPackages went out.  Network between transactions."""
    with runtime.db.read():
        inbox = Vault.of_runtime(runtime).inbox()
        known = runtime.kv.get(_REGISTERED) == inbox.installation_id
    if not known and not _registered(runtime, node, inbox):
        update = (
            add_installation_update(inbox.account, inbox.inbox_id, inbox.installation_seed)
            if inbox.joins_existing
            else create_inbox_update(inbox.account, inbox.installation_seed, nonce=FIRST_NONCE)
        )
        node.publish_identity_update(update)
        if not _registered(runtime, node, inbox):
            raise ServiceRefused(
                "NOT_REGISTERED", f"the node took inbox {inbox.inbox_id}'s update but lists no such installation"
            )
    if not known:
        with runtime.db.write():
            runtime.kv.set(_REGISTERED, inbox.installation_id)
    return _upload_key_packages(runtime, node)


def _registered(runtime: contract.Runtime, node: NodeService, inbox: Inbox) -> bool:
    identity_updates.refresh(runtime, node, [inbox.inbox_id])
    with runtime.db.read():
        state = identity_updates.inbox_state(runtime.db, inbox.inbox_id)
    return state is not None and inbox.installation_key in state.installation_keys


def _upload_key_packages(runtime: contract.Runtime, node: NodeService) -> int:
    with runtime.db.read():
        vault = Vault.of_runtime(runtime)
        given = {bytes(ref) for ref, _ in runtime.db.all(_PUBLISHED)}
        fresh = [(ref, vault.key_package(ref)) for ref in vault.key_package_refs() if ref not in given]
    uploaded = 0
    for ref, private in fresh:
        if private is None:
            continue
        node.upload_key_package(encode(private.key_package, KeyPackage))
        with runtime.db.write():
            # Strictly after every earlier upload, whatever the clock says: the newest is the current one.
            last = int(runtime.db.value(_LAST_PUBLISHED) or 0)
            runtime.db.execute(_RECORD_PUBLISHED, (ref, max(runtime.clock.now_ms() * 1_000_000, last + 1)))
        uploaded += 1
    return uploaded


def keep_stock(runtime: contract.Runtime, node: NodeService) -> int:
    """The key-package job: delete the keys of KeyPackages past their lifetime and its grace, register if we
    are not yet, make a fresh KeyPackage when the current one was used or expired, and upload it; a node that
    cannot be reached (or refuses) waits for the next pass."""
    grace_s = int(runtime.db.settings.sources.resolve(KEY_PACKAGE_GRACE_S).value)
    runtime.run_command("xmtp.node_forget_expired_key_packages", {"grace_s": grace_s})
    with runtime.db.read():
        short = needs_fresh_key_package(runtime.db, Vault.of_runtime(runtime), runtime.clock.now_ms() // 1000)
    if short:
        runtime.run_command("xmtp.node_top_up_key_packages", {})
    try:
        return register(runtime, node)
    except (ServiceUnavailable, ServiceRefused) as exc:
        log.info("registering with the node waits: %s", exc)
        return 0
