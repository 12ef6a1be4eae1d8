"""The XMTP node: ``tessera serve --xmtp-port`` answers XMTP v3 clients (libxmtp) on the sovereign store.

- :mod:`.commands` and :mod:`.projectors`: the writes as plugin commands and the tables they fill;
- :mod:`.checks`: every refusal (through the ``xmtp_identity`` library), as a gRPC status with a reason;
- :mod:`.reads`: the queries, on the store's reader threads;
- :mod:`.paging`: the XMTP API's paging by id;
- :mod:`.fanout`: live delivery to streams, in commit order;
- :mod:`.mls_api`, :mod:`.identity_api`: the two gRPC services;
- :mod:`.rpc_metrics` and :mod:`.limits`: what /metrics counts, and the bound on open streams;
- :mod:`.server`: the grpc.aio server beside the WebSocket server.

docs/xmtp-node.md says what the node does and what it does not.
"""
