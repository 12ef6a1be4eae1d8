"""Message processing: what one incoming event does, in the order the walk takes.

:mod:`.handlers` decodes and verifies an event and dispatches it: a kind-445
group event is deduplicated, its group loaded (:mod:`protocols.marmot.state.store`)
and made an :class:`~.item.Item` (:mod:`.item`, also the two ways an event
waits); its envelope is opened (:mod:`protocols.marmot.wire.outer`) and the MLS
message inside goes to :mod:`.commits` (apply, compete, roll back) or
:mod:`.messages` (application messages and proposals), or to :mod:`.branches`
when only a losing branch opens it.  Every commit goes through Marmot's
admin rule (:mod:`.rules`).  A kind-1059 gift wrap goes to :mod:`.welcomes`.
Each returns facts and intents; the group's state write is one call into
the state room.
"""
