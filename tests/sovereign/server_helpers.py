"""Helpers for the tests of ``tessera serve``: a real server process, installations, and MLS-shaped payloads.

The store checks a payload's cleartext header, never its ciphertext, so these
tests build PrivateMessages and Welcomes with random ciphertext: thousands of
them cost nothing, and each is unique (the store treats the same payload sent
twice to a group as one message).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import nacl.signing
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from protocols.libraries import mls
from protocols.libraries.delivery.client import Client, connect
from protocols.libraries.delivery.records import WELCOME
from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.messages import MLSMessage
from protocols.libraries.mls.messages.framing import ContentType
from protocols.libraries.mls.messages.private_message import PrivateMessage
from protocols.libraries.mls.messages.registries import CipherSuite, ProtocolVersion
from protocols.libraries.mls.messages.update_path import HPKECiphertext
from protocols.libraries.mls.messages.welcome import EncryptedGroupSecrets, Welcome
from tests.helpers import TESSERA, clean_environment, query_file

# --- payloads ---------------------------------------------------------------------------------------


def private_message(
    group_id: str, *, epoch: int = 0, content_type: ContentType = ContentType.APPLICATION, size: int = 64
) -> bytes:
    """An MLS PrivateMessage for ``group_id`` (hex) with ``size`` bytes of random ciphertext."""
    inner = PrivateMessage(bytes.fromhex(group_id), epoch, content_type, b"", os.urandom(16), os.urandom(size))
    return encode(MLSMessage(ProtocolVersion.MLS10, inner))


def welcome(size: int = 128) -> bytes:
    """An MLS Welcome with random secrets (the store keeps it for the recipient the sender names)."""
    secrets = (EncryptedGroupSecrets(os.urandom(32), HPKECiphertext(os.urandom(32), os.urandom(48))),)
    inner = Welcome(CipherSuite.MLS_128_DHKEMX25519_AES128GCM_SHA256_ED25519, secrets, os.urandom(size))
    return encode(MLSMessage(ProtocolVersion.MLS10, inner))


def new_group_id() -> str:
    return os.urandom(16).hex()


# --- installations ----------------------------------------------------------------------------------


class Installation:
    """An installation key (Ed25519) that is also an MLS identity, so it can make KeyPackages of its own."""

    def __init__(self) -> None:
        self.identity = mls.new_identity(os.urandom(16).hex())
        self.signing_key = nacl.signing.SigningKey(self.identity.signature.private)
        self.id = self.signing_key.verify_key.encode().hex()

    def key_package(self) -> bytes:
        key_package, _ = mls.create_key_package(self.identity)
        return mls.key_package_to_bytes(key_package)

    async def connect(self, url: str, *, inbox: int = 10_000) -> Client:
        return await connect(url, self.signing_key, timeout=30, inbox=inbox)


async def seat(creator: Client, members: Iterable[Client], group_id: str) -> None:
    """``creator`` makes the group; each member joins through a Welcome, takes it from its pushes and acks it."""
    await creator.join(group_id)
    for member in members:
        await creator.send(group_id, welcome(), recipient=member.installation)
        await member.join(group_id)
        pushed = await member.receive(timeout=10)
        assert pushed.message_type == WELCOME and pushed.group_id == group_id
        await member.ack([pushed.id])


class RawClient:
    """One WebSocket spoken to frame by frame: for what the real client never sends."""

    def __init__(self, ws: ClientConnection, nonce: bytes):
        self.ws = ws
        self.nonce = nonce

    @classmethod
    async def open(cls, url: str, **options: Any) -> RawClient:
        """Connect and read the challenge (not answered yet)."""
        ws = await ws_connect(url, compression=None, max_size=None, **options)
        challenge = json.loads(await ws.recv())
        assert challenge["type"] == "challenge" and len(challenge["nonce"]) == 64, challenge
        return cls(ws, bytes.fromhex(challenge["nonce"]))

    def hello_frame(self, installation: Installation, *, signer: Installation | None = None) -> dict[str, Any]:
        """The hello for ``installation``, signed by ``signer`` (default: itself)."""
        signature = (signer or installation).signing_key.sign(b"tessera-serve-auth-v1\x00" + self.nonce).signature
        return {"type": "hello", "installation": installation.id, "signature": signature.hex()}

    async def authenticate(self, installation: Installation) -> dict[str, Any]:
        ready = await self.call(self.hello_frame(installation))
        assert ready["type"] == "ready" and ready["installation"] == installation.id, ready
        return ready

    async def call(self, frame: dict[str, Any] | str | bytes, timeout: float = 10) -> dict[str, Any]:
        """Send ``frame`` (a dict is sent as JSON) and return the next frame that is not a pushed message."""
        await self.ws.send(json.dumps(frame) if isinstance(frame, dict) else frame)
        async with asyncio.timeout(timeout):
            while True:
                reply: dict[str, Any] = json.loads(await self.ws.recv())
                if reply["type"] != "message":
                    return reply

    async def close(self) -> None:
        await self.ws.close()


def write_config(path: Path, **sections: Mapping[str, int | str]) -> Path:
    """A ``tessera serve --config`` TOML file with ``sections`` (``server={"auth_timeout_s": 5}``)."""
    lines = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in values.items())
    path.write_text("\n".join(lines) + "\n")
    return path


# --- the server process ---------------------------------------------------------------------------------

#: ``tessera serve`` as its own process, from this checkout.
SERVE = [*TESSERA, "serve"]


def init_database(path: Path) -> None:
    """A new database with the sovereign plugin enabled, made as a user would (``tessera init``)."""
    done = subprocess.run(
        [*TESSERA, "--db", str(path), "init", "--protocol", "sovereign"],
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


class ServerProcess:
    """``tessera serve --port 0`` on ``db`` as its own process; its log goes to ``db``'s folder."""

    def __init__(self, db: Path, *args: str, env: dict[str, str] | None = None):
        self.db = db
        self.args = args
        self.env = env or clean_environment()
        self.log = db.with_suffix(".serve.log")
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.port = 0

    def start(self, timeout: float = 30) -> ServerProcess:
        with self.log.open("a") as log:
            self.proc = subprocess.Popen(
                [*SERVE, "--db", str(self.db), "--port", "0", *self.args],
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline().strip() if ready else ""
        if not line.startswith("listening on "):
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"tessera serve did not start: {line!r}\n{self.log.read_text()[-3000:]}")
        self.url = line.removeprefix("listening on ")
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def http(self, path: str) -> tuple[int, str, str]:
        """GET ``path`` over plain HTTP: (status, content type, body)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as response:
                return response.status, response.headers["Content-Type"], response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers["Content-Type"], exc.read().decode()

    def health(self) -> dict[str, object]:
        status, _, body = self.http("/healthz")
        assert status == 200
        loaded: dict[str, object] = json.loads(body)
        return loaded

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, then wait: the exit code."""
        return self._end(signal.SIGTERM, timeout)

    def kill(self) -> int:
        return self._end(signal.SIGKILL, 30)

    def _end(self, signum: signal.Signals, timeout: float) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        code = self.proc.wait(timeout)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code

    def __enter__(self) -> ServerProcess:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()


@contextlib.contextmanager
def serving(folder: Path, **config: Mapping[str, int | str]) -> Iterator[ServerProcess]:
    """A new database in ``folder`` and ``tessera serve`` on it (with a ``--config`` of ``config``, if any)."""
    db = folder / "store.db"
    init_database(db)
    args = ["--config", str(write_config(folder / "serve.toml", **config))] if config else []
    with ServerProcess(db, *args) as server:
        yield server


def stored_ids(db: Path) -> list[str]:
    return [row[0] for row in query_file(str(db), "SELECT id FROM sovereign_messages ORDER BY id")]


async def gather_messages(client: Client, count: int, timeout: float = 30) -> list[str]:
    """The ids of the next ``count`` pushed messages (TimeoutError if they do not all come in time)."""
    ids: list[str] = []
    async with asyncio.timeout(timeout):
        while len(ids) < count:
            ids.append((await client.receive()).id)
    return ids
