"""Jobs: the thin shells that run the core's work, and the command line.

Lives here: the tick daemon (``tick``) that drains the queues under a lease
with the jobs plugins register (``register_jobs``; the core's own are in
``core.builtin``), ingest, rebuilds (``rebuild``: export, local or Spark
replay, shadow tables, swap, verify), the plugin scaffold (``scaffold``), the
CLI (``cli``) and its output helpers.

May import: ``core``, ``schema_loader`` and ``projectors``; never a protocol
(plugins add their commands through ``register_cli_commands``).  Protocols may
import jobs (the Marmot demo runs the daemon and a rebuild).
"""
