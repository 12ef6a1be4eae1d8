"""Marmot's wire: Nostr events, their encryption layers and the event kinds Marmot publishes.

Everything here is pure (bytes, dicts and engine states in; bytes, dicts and
engine values out) and touches no storage: the plugin's handlers and
commands use it to read and write what relays carry.  From the outside in:
:mod:`.nostr` (signed events), :mod:`.outer` (the kind-445 group events of
one group: each epoch's key, opening and sealing) over :mod:`.envelope` (its
byte format), :mod:`.rumors` (the unsigned events inside), :mod:`.gift_wrap`
with :mod:`.nip44` (NIP-59 wrapping, for welcomes), the event kinds
(:mod:`.key_package_events`, :mod:`.welcome_events`, :mod:`.relay_lists`),
the group data extension in a group's context (:mod:`.group_data`), and
:mod:`.nip19` (``npub``/``nsec`` text forms) over :mod:`.secp256k1`.
"""
