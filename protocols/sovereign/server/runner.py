"""``tessera serve``: the asyncio WebSocket server, its store threads and the tick daemon, in one process.

Threads: the event loop (this module and :mod:`.session`) owns the sockets;
the :class:`~.pool.StorePool` threads own one SQLite connection each; the
tick daemon runs in a thread of its own on its own connection, under the
``tick`` lease like any ``tessera tick`` (so retention runs, and a second
daemon elsewhere only stands by).

Shutdown (SIGTERM or SIGINT, or :meth:`SovereignServer.request_stop`):
stop listening, stop reading requests, let every request already handed to
the store finish and its reply be written, close each connection with 1001,
then stop the store threads and the tick daemon.  A second signal ends the
process at once.  One server per database: server order relies on one
writer.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pluggy
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from core.app import App, open_app
from core.errors import TesseraError
from core.plugins import make_plugin_manager
from core.settings import Settings
from jobs.tick import DaemonMode, TickDaemon
from protocols.sovereign import retention
from protocols.sovereign.commands import PROTOCOL
from protocols.sovereign.config import ServerConfig
from protocols.sovereign.server import metrics as http
from protocols.sovereign.server.metrics import ServerMetrics
from protocols.sovereign.server.pool import StorePool
from protocols.sovereign.server.session import Hub, Session
from protocols.sovereign.service import Store
from protocols.sovereign.xmtp_node.server import CannotServeXmtp, XmtpNode

log = logging.getLogger("tessera.sovereign.server")

#: Frames up to this many times ``max_frame_bytes`` are read and answered with ``frame_too_large``; only
#: a bigger one makes websockets close the connection (1009), since it must hold a whole frame to read it.
FRAME_READ_FACTOR = 4


class CannotListen(TesseraError, OSError):
    """The address is taken, or not ours to bind."""


class SovereignServer:
    """The server on one database; ``await start()``, then ``await wait_stopped()`` (or ``stop()``)."""

    def __init__(
        self,
        db_path: str,
        settings: Settings,
        config: ServerConfig,
        *,
        pm: pluggy.PluginManager | None = None,
        readers: int = 2,
        run_tick: bool = True,
    ):
        self.db_path = db_path
        self.settings = settings
        self.config = config
        self.pm = pm or make_plugin_manager()
        self.readers = readers
        self.metrics = ServerMetrics()
        self.hub = Hub()
        self.sessions: set[Session] = set()
        self.stopping = False
        self.started_at = time.monotonic()
        self._tick = _TickThread(self._open_app) if run_tick else None
        self._pool: StorePool | None = None
        self._server: Server | None = None
        self.xmtp: XmtpNode | None = None
        self._stop_requested: asyncio.Event | None = None

    # --- starting ----------------------------------------------------------------------------------

    def _open_app(self) -> App:
        app = open_app(self.settings, self.pm, path=self.db_path)
        try:
            app.require_enabled(PROTOCOL)
        except BaseException:
            app.close()
            raise
        return app

    def _open_store(self) -> tuple[App, Store]:
        app = self._open_app()
        return app, Store(app, self.config.limits)

    async def start(self) -> None:
        """Open the store threads, start the tick daemon, listen; raises :class:`CannotListen`."""
        self._stop_requested = asyncio.Event()
        self._pool = StorePool(self._open_store, readers=self.readers, observe=self.metrics.observe_store)
        await asyncio.to_thread(self._pool.start)
        # The tick daemon's retention job reads its policy from the database, not from our configuration.
        await self._pool.write(
            "save_retention_policy", lambda store: retention.save_policy(store.app.runtime, self.config.retention)
        )
        try:
            self._server = await serve(
                self._handle,
                self.config.host,
                self.config.port,
                process_request=self._process_request,
                max_size=self.config.max_frame_bytes * FRAME_READ_FACTOR,
                compression=None,  # payloads are ciphertext: deflate would spend CPU to save nothing
            )
        except (OSError, UnicodeError) as exc:  # a host name the resolver cannot even encode is a UnicodeError
            await asyncio.to_thread(self._pool.stop)
            raise CannotListen(_listen_failure(self.config.host, self.config.port, exc)) from None
        if self.config.xmtp_port >= 0:
            await self._start_xmtp()
        if self._tick is not None:
            self._tick.start()
        self.started_at = time.monotonic()

    async def _start_xmtp(self) -> None:
        """The XMTP node beside the WebSocket server, on the same store threads (docs/xmtp-node.md)."""
        assert self._pool is not None and self._server is not None
        node = XmtpNode(self._pool, self.config, self.metrics.xmtp)
        try:
            await node.start()
        except CannotServeXmtp as exc:
            self._server.close()
            await self._server.wait_closed()
            await asyncio.to_thread(self._pool.stop)
            raise CannotListen(str(exc)) from None
        self.xmtp = node

    @property
    def xmtp_url(self) -> str | None:
        """Where XMTP clients reach the node (``http://HOST:PORT``), or None when it is not served."""
        return self.xmtp.url if self.xmtp is not None else None

    @property
    def address(self) -> tuple[str, int]:
        """The host and port listened on (the port chosen when the configuration says 0)."""
        assert self._server is not None, "the server is not started"
        host, port = self._server.sockets[0].getsockname()[:2]
        return host, port

    @property
    def url(self) -> str:
        host, port = self.address
        return f"ws://[{host}]:{port}" if ":" in host else f"ws://{host}:{port}"

    # --- serving -----------------------------------------------------------------------------------

    async def _handle(self, ws: ServerConnection) -> None:
        assert self._pool is not None
        session = Session(ws, config=self.config, pool=self._pool, hub=self.hub, metrics=self.metrics)
        self.sessions.add(session)
        try:
            if self.stopping:
                session.shut_down()
            await session.run()
        finally:
            self.sessions.discard(session)

    async def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        """Answer ``/healthz`` and ``/metrics`` as plain HTTP; anything else goes on to the WebSocket handshake."""
        path = request.path.split("?", 1)[0]
        if path == http.HEALTH_PATH:
            body = http.health_body(
                status="stopping" if self.stopping else "ok",
                database=self.db_path,
                uptime_s=time.monotonic() - self.started_at,
                connections=len(self.sessions),
            )
            return http.http_response(connection, 200, body, http.JSON_CONTENT_TYPE)
        if path == http.METRICS_PATH:
            pool = self._pool
            assert pool is not None
            self.metrics.observe_queues(session.queue.bytes for session in self.sessions)
            try:
                await self.metrics.refresh_stats(lambda: pool.read("stats", lambda store: store.stats()))
            except Exception:  # figures a little stale beat no figures
                log.exception("could not refresh the store figures for /metrics")
            return http.http_response(connection, 200, self.metrics.exposition(), http.METRICS_CONTENT_TYPE)
        return None

    # --- stopping ----------------------------------------------------------------------------------

    def request_stop(self) -> None:
        """Ask :meth:`wait_stopped` to shut the server down (safe to call from a signal handler on the loop)."""
        if self._stop_requested is not None:
            self._stop_requested.set()

    async def wait_stopped(self) -> None:
        """Serve until :meth:`request_stop`, then shut down gracefully."""
        assert self._stop_requested is not None, "the server is not started"
        await self._stop_requested.wait()
        await self.stop()

    async def stop(self) -> None:
        """Stop listening, finish the requests in flight, close every connection, stop the threads."""
        if self.stopping:
            return
        self.stopping = True
        log.info("stopping: finishing %d connection(s)", len(self.sessions))
        if self._server is not None:
            self._server.close(close_connections=False)
            for session in list(self.sessions):
                session.shut_down()
            await self._server.wait_closed()
        if self.xmtp is not None:
            await self.xmtp.stop()  # its calls in flight finish on the store threads, which stop after
        if self._pool is not None:
            await asyncio.to_thread(self._pool.stop)
        if self._tick is not None:
            await asyncio.to_thread(self._tick.stop)
        log.info("stopped")


class _TickThread:
    """The tick daemon's passes in a thread of their own (its own connection, under the tick lease)."""

    def __init__(self, open_app: Callable[[], App]):
        self._open_app = open_app
        self._daemon: TickDaemon | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="sovereign-tick", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            app = self._open_app()
        except Exception:
            log.exception("the tick daemon could not open the database; retention does not run")
            return
        try:
            self._daemon = TickDaemon(app, mode=DaemonMode.FOREVER)
            self._daemon.stopping = self._stopping
            report = self._daemon.run()
            log.info("tick daemon stopped (%s) after %d passes", report.exit_reason, report.passes)
        except Exception:
            log.exception("the tick daemon failed; retention does not run until the server restarts")
        finally:
            app.close()

    def stop(self) -> None:
        """Stop after the daemon's current item (blocks until it has)."""
        self._stopping = True
        if self._daemon is not None:
            self._daemon.stopping = True
        if self._thread.is_alive():
            self._thread.join()


def _listen_failure(host: str, port: int, exc: OSError | UnicodeError) -> str:
    shown = f"{host[:60]}{'...' if len(host) > 60 else ''}:{port}"
    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        return f"cannot listen on {shown}: the address is in use; stop what holds it or choose another --port"
    reason = (exc.strerror if isinstance(exc, OSError) else None) or "not a host name or address"
    return f"cannot listen on {shown}: {reason}; check --host and --port"


def run(
    db_path: str,
    settings: Settings,
    config: ServerConfig,
    *,
    pm: pluggy.PluginManager | None = None,
    on_listening: Callable[[str], Any] | None = None,
    on_xmtp_listening: Callable[[str], Any] | None = None,
    check_only: bool = False,
) -> None:
    """Run the server until SIGTERM or SIGINT; ``on_listening(url)`` once it listens.

    ``check_only``: start everything (configuration, database, threads, the listening socket), report the
    address, and stop at once — a dry run for operators and scripts.  ``on_xmtp_listening(url)`` once the
    XMTP node listens too (when the configuration gives it a port).
    """

    async def main() -> None:
        server = SovereignServer(db_path, settings, config, pm=pm)
        await server.start()
        if check_only:
            if on_listening is not None:
                on_listening(server.url)
            server.request_stop()
            await server.wait_stopped()
            return
        loop = asyncio.get_running_loop()

        def on_signal(signum: signal.Signals) -> None:
            log.info("received %s: finishing requests in flight, then stopping", signum.name)
            for each in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(each)  # a second signal ends the process at once
            server.request_stop()

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, on_signal, signum)
        if on_listening is not None:
            on_listening(server.url)
        if on_xmtp_listening is not None and server.xmtp_url is not None:
            on_xmtp_listening(server.xmtp_url)
        await server.wait_stopped()

    asyncio.run(main())
