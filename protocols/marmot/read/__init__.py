"""The Marmot read models, and reading them.

:mod:`.projectors` builds them from the facts: ``marmot.processed`` (groups,
the processing record of every outer event, pending proposals, early
deletions; it runs inside the item, since the handler dedupes with it),
``marmot.history`` (the decrypted messages) and ``marmot.welcomes``
(invitations).  :mod:`.history` reads and writes one group's history and
processing record, :mod:`.queries` answers the CLI's other questions, and
:mod:`.states` names the states an outer event or a message can be in.
"""
