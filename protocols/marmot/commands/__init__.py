"""The Marmot plugin's commands, one module per subject, in the order a user meets them.

:mod:`.account` (create our account, publish KeyPackages, set our inbox
relays), :mod:`.groups` (create or join a group; invite, remove, update our
keys, leave: commits published, not merged), :mod:`.welcomes` (accept or
decline an invitation), :mod:`.messages` (send, react, delete), and
:mod:`.params` (checking what they are given).  Each runs in one transaction
and, like a handler, returns facts and intents; group state goes through
:mod:`protocols.marmot.state.store`.
"""
