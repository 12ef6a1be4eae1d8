"""``tessera serve``: the sovereign store on a WebSocket (protocol: docs/server-protocol.md).

- :mod:`.requests`: each request type's fields, store call and reply;
- :mod:`.session`: one connection (challenge, requests, pushes, its bounded send queue);
- :mod:`.pool`: the threads that own the SQLite connections (one writer, a few readers);
- :mod:`.metrics`: ``/healthz`` and ``/metrics``;
- :mod:`.runner`: the server, the tick daemon beside it, signals and shutdown.

The wire format (frame types, fields, error codes) is :mod:`protocols.libraries.delivery.frames`, shared with the
clients.
"""
