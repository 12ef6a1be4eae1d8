"""The plugin's side of the relays: what goes out, what comes in, and feeding it to the pipeline.

:mod:`.nostr_transport` is the tick's ``nostr`` transport (outgoing rows
published to relays, our own group events handed back as a relay would) and
the intents that queue them; :mod:`.sync` reads each group's events and our
invitations from relays into ``incoming`` (once, or live); :mod:`.ingest`
backfills a batch of one group's events through the pipeline in the order
that needs the fewest retries.  The relay client itself is
:mod:`protocols.marmot.relays`, which knows nothing of the plugin's state.
"""
