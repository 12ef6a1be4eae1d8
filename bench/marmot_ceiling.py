"""The honest ceiling of a Marmot message: its cryptography and its rows, with nothing of ours in between.

Per kind-445 event, with the same libraries the pipeline uses and the keys a
member of the epoch holds:

1. the outer event: JSON, the NIP-01 id (SHA-256 of the canonical array) and
   its BIP-340 signature (coincurve);
2. the MIP-03 envelope: base64, ChaCha20-Poly1305 under the epoch's
   exporter-derived key (cryptography);
3. the PrivateMessage's fields, read by hand;
4. RFC 9420 §6.3.2: the sender-data key and nonce (two HKDF-Expands over the
   ciphertext sample) and its AES-128-GCM open;
5. the sender's application ratchet to that generation: key, nonce and next
   secret (three HKDF-Expands per generation), and the content's AES-GCM open;
6. the inner signature: Ed25519 over ``SignContent("FramedContentTBS", ...)``
   (libsodium via PyNaCl), the GroupContext encoded once per epoch;
7. the rumor's JSON.

Then the rows: every INSERT, UPDATE and DELETE our pipeline ran for that
message, with the same bindings (recorded in an untimed run on a copy of the
same database, see :func:`record_writes`), replayed with raw apsw — one
transaction per message, or micro-batches by our rule (``batch_items`` or
``batch_ms``, whichever first) — with the write-ahead log synced at each commit (``synchronous=FULL``):
the durability our commits and MDK's have.  The sealed group state is written
as the bytes ours wrote; serialising and sealing it is not counted (the
ceiling is strict).  Per epoch work (the secret tree down to the sender's
leaf, the GroupContext's encoding, the exporter key) is done before timing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import struct
import time
from collections.abc import Callable, Sequence
from typing import Any

import apsw
import attrs
import coincurve
import nacl.bindings
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from core.app import App
from protocols.libraries import mls
from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.schedule.ratchet import RatchetKind
from protocols.marmot.wire import outer

#: A write statement and its bindings, as the pipeline ran it.
Write = tuple[str, Any]
_HEAD = struct.Struct(">QB")
_SENDER_DATA = struct.Struct(">II4s")
_SIGN_LABEL = b"MLS 1.0 FramedContentTBS"
_TBS_HEAD = bytes.fromhex("00010002")  # mls10, mls_private_message
_NH = 32  # cipher suite 1 (MDK's): SHA-256, AES-128-GCM, Ed25519
_NK, _NN = 16, 12


@attrs.frozen
class EpochSecrets:
    """What a member holds for one epoch, taken from its state before timing.

    Attributes:
        outer_key: the MIP-03 exporter key of the envelope.
        sender_data_secret: the epoch's sender-data secret.
        ratchets: per sender leaf, ``(generation, secret)`` of its application ratchet.
        signature_keys: per sender leaf, its Ed25519 public key.
        context: the epoch's encoded GroupContext (what member signatures cover after the content).
    """

    outer_key: bytes
    sender_data_secret: bytes
    ratchets: dict[int, tuple[int, bytes]]
    signature_keys: dict[int, bytes]
    context: bytes


def epoch_secrets(state: mls.GroupState) -> EpochSecrets:
    """The keys of ``state``'s epoch, every other leaf's application ratchet expanded (per-epoch work)."""
    view, ratchets, keys = state.view, {}, {}
    for leaf in range(view.secret_tree.n_leaves):
        key = view.signature_keys(leaf)
        if leaf == view.own_leaf or key is None:
            continue
        _, ratchet = view.secret_tree._ratchet(leaf, RatchetKind.APPLICATION)  # the tree down to the leaf
        ratchets[leaf] = (ratchet.generation, ratchet.secret)
        keys[leaf] = key
    return EpochSecrets(outer.current_key(state), view.sender_data_secret, ratchets, keys, encode(state.context))


def _opaque(data: bytes, pos: int) -> tuple[bytes, int]:
    first = data[pos]
    if first < 0x40:
        return data[pos + 1 : pos + 1 + first], pos + 1 + first
    if first < 0x80:
        length = ((first & 0x3F) << 8) | data[pos + 1]
        return data[pos + 2 : pos + 2 + length], pos + 2 + length
    length = int.from_bytes(data[pos : pos + 4], "big") & 0x3FFFFFFF
    return data[pos + 4 : pos + 4 + length], pos + 4 + length


def _vector(value: bytes) -> bytes:
    n = len(value)
    return (bytes((n,)) if n < 0x40 else (n | 0x4000).to_bytes(2, "big")) + value


def _expand(secret: bytes, label: bytes, context: bytes, length: int) -> bytes:
    """ExpandWithLabel for a SHA-256 suite and ``length`` ≤ 32: one HMAC block."""
    info = length.to_bytes(2, "big") + _vector(b"MLS 1.0 " + label) + _vector(context)
    return hmac.digest(secret, info + b"\x01", "sha256")[:length]


class Reader:
    """The cryptography of one member reading the stream in order (see the module docs, steps 1-7)."""

    def __init__(self, secrets: EpochSecrets) -> None:
        self.secrets = secrets
        self.ratchets = dict(secrets.ratchets)

    def read(self, line: bytes) -> dict[str, Any]:
        """The rumor one event carries, every check of the module docs passed."""
        event = json.loads(line)
        serial = json.dumps(
            [0, event["pubkey"], event["created_at"], event["kind"], event["tags"], event["content"]],
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode()
        digest = hashlib.sha256(serial).digest()
        assert digest.hex() == event["id"]
        assert coincurve.PublicKeyXOnly(bytes.fromhex(event["pubkey"])).verify(bytes.fromhex(event["sig"]), digest)
        raw = base64.b64decode(event["content"])
        message = ChaCha20Poly1305(self.secrets.outer_key).decrypt(raw[:12], raw[12:], b"")
        rumor: dict[str, Any] = json.loads(self._private_message(message))
        return rumor

    def _private_message(self, message: bytes) -> bytes:
        group_id, pos = _opaque(message, 4)
        epoch, content_type = _HEAD.unpack_from(message, pos)
        head_end = pos + 9
        authenticated_data, content_aad_end = _opaque(message, head_end)
        encrypted_sender_data, pos = _opaque(message, content_aad_end)
        ciphertext, _ = _opaque(message, pos)
        head = message[4:head_end]  # group_id, epoch, content_type: the sender-data AAD
        sample = ciphertext[:_NH]
        sender_key = _expand(self.secrets.sender_data_secret, b"key", sample, _NK)
        sender_nonce = _expand(self.secrets.sender_data_secret, b"nonce", sample, _NN)
        sender_data = AESGCM(sender_key).decrypt(sender_nonce, encrypted_sender_data, head)
        leaf, generation, guard = _SENDER_DATA.unpack(sender_data)
        key, nonce = self._ratchet_to(leaf, generation)
        nonce = bytes(a ^ b for a, b in zip(nonce[:4], guard, strict=True)) + nonce[4:]
        plaintext = AESGCM(key).decrypt(nonce, ciphertext, message[4:content_aad_end])  # the head + the AD
        data, at = _opaque(plaintext, 0)
        signature, _ = _opaque(plaintext, at)
        framed = (
            _vector(group_id)
            + struct.pack(">QBI", epoch, 1, leaf)
            + _vector(authenticated_data)
            + bytes((content_type,))
            + _vector(data)
        )
        signed = _vector(_SIGN_LABEL) + _vector(_TBS_HEAD + framed + self.secrets.context)
        nacl.bindings.crypto_sign_open(signature + signed, self.secrets.signature_keys[leaf])
        return data

    def _ratchet_to(self, leaf: int, generation: int) -> tuple[bytes, bytes]:
        """The key and nonce of ``generation``; the ratchet moves past it."""
        at, secret = self.ratchets[leaf]
        while True:
            context = at.to_bytes(4, "big")
            if at == generation:
                key, nonce = _expand(secret, b"key", context, _NK), _expand(secret, b"nonce", context, _NN)
            secret = _expand(secret, b"secret", context, _NH)
            at += 1
            if at > generation:
                self.ratchets[leaf] = (at, secret)
                return key, nonce


def record_writes(app: App, run: Callable[[], object]) -> list[list[Write]]:
    """The write statements of each item transaction ``run`` commits on ``app`` (one list per item)."""
    items: list[list[Write]] = []
    current: list[Write] = []

    def trace(_cursor: apsw.Cursor, sql: str, bindings: Any) -> bool:
        nonlocal current
        verb = sql.lstrip()[:6].upper()
        if verb in ("INSERT", "UPDATE", "DELETE"):
            current.append((sql, bindings))
        elif verb == "COMMIT":
            if any(statement.lstrip().startswith("DELETE FROM incoming") for statement, _ in current):
                items.append(current)
            current = []
        return True

    app.db.conn.exec_trace = trace
    try:
        run()
    finally:
        app.db.conn.exec_trace = None
    return items


def rate(
    path: str,
    secrets: EpochSecrets,
    lines: Sequence[bytes],
    writes: list[list[Write]],
    batch_items: int = 1,
    batch_ms: float = float("inf"),
) -> float:
    """Events/s of the ceiling on a copy of the database at ``path``.

    A transaction commits after ``batch_items`` messages or once it has been open ``batch_ms``, whichever
    comes first: the rule our micro-batches follow (``batch_items`` 1 is one transaction per message).
    """
    assert len(writes) == len(lines), f"{len(writes)} item transactions recorded for {len(lines)} events"
    conn = apsw.Connection(path)
    conn.pragma("synchronous", "FULL")  # the WAL synced at every commit: a committed message survives power loss
    reader = Reader(secrets)
    limit_s = batch_ms / 1000
    started = time.perf_counter()
    pending = list(zip(lines, writes, strict=True))
    at = 0
    while at < len(pending):
        with conn:
            opened = time.perf_counter()
            for line, statements in pending[at : at + batch_items]:
                reader.read(line)
                for sql, bindings in statements:
                    conn.execute(sql, bindings)
                at += 1
                if time.perf_counter() - opened >= limit_s:
                    break
    seconds = time.perf_counter() - started
    conn.close()
    return len(lines) / seconds
