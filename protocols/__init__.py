"""The protocol plugins that ship with Tessera, one package each, and the shared MLS library.

Lives here: ``example`` (the plugin guide's signed chat log), ``marmot`` (MLS
group messaging over Nostr) and ``mls`` (a group-crypto library, not a plugin).
Each plugin is found through the ``tessera.protocols`` entry point, exactly as
a pip-installed third-party plugin is.

May import: ``core``, ``schema_loader``, ``projectors`` and ``jobs``.  A plugin
never imports another plugin; any plugin may import ``protocols.mls``, which
imports no plugin.
"""
