"""Group-state persistence of the Marmot plugin: everything it keeps in core ``protocol_state``, sealed at rest.

:mod:`.store` is the room's centre: the key layout, sealing, and every read
and write of a group (engine state, meta, snapshots, branches, kept events,
welcomes held for their commit), so that one item's state write is one call
into it.  Around it: :mod:`.key` (where the at-rest key comes from),
:mod:`.meta` (the commits of each epoch in the rollback window),
:mod:`.account` (our Nostr key and MLS identity), :mod:`.key_packages` (the
KeyPackages we published) and :mod:`.inbox` (the relays invitations reach
us on).
"""
