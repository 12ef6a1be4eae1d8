"""The protocol plugins that ship with Tessera, one package each, and the libraries they share.

Plugins: ``example`` (the plugin guide's signed chat log), ``marmot`` (MLS
group messaging over Nostr), ``sovereign`` (the store behind ``tessera
serve``) and ``xmtp`` (an XMTP-style client).  Each is found through the
``tessera.protocols`` entry point, exactly as a pip-installed third-party
plugin is.

Libraries: ``libraries/`` holds code several plugins use and none owns (the
MLS engine, the wire protocol of ``tessera serve``, sealing at rest); nothing
there is a plugin.

May import: ``core``, ``schema_loader``, ``projectors`` and ``jobs``.  A plugin
never imports another plugin; any plugin may import ``protocols.libraries``,
which imports no plugin.
"""
