"""The wire protocol of ``tessera serve`` (docs/server-protocol.md), shared by both ends.

Not a plugin: a library like :mod:`protocols.libraries.mls`.  The server (the
``sovereign`` plugin) and its clients (the ``xmtp`` plugin, the benchmarks)
speak it through the same code: :mod:`.frames` (the JSON frames and their
codes), :mod:`.records` (what a stored message, a page and an identity look
like on the wire) and :mod:`.client` (an asyncio client).
"""
