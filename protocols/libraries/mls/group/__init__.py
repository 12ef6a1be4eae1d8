"""The RFC 9420 group state machine: creating, joining and running a group.

- :mod:`.state`: :class:`~.state.GroupState`, one member's immutable view of
  one epoch, and :class:`~.state.GroupConfig`, its local choices.
- :mod:`.create`, :mod:`.key_packages`: a new group; KeyPackages.
- :mod:`.proposals`: proposals sent alone; :mod:`.proposal_list`: checking a
  commit's list (RFC 9420 section 12.2); :mod:`.staging`: applying it.
- :mod:`.commit`: our commits and the Welcome for the members they add.
- :mod:`.process`: every message another member sends.
- :mod:`.join`: joining from a Welcome; :mod:`.external`: joining by
  external commit from a GroupInfo.
- :mod:`.epoch`: entering an epoch, the window of earlier ones and PSKs.
"""
