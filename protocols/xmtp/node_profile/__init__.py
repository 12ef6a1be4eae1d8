"""The plugin speaking XMTP as libxmtp does, through the XMTP node API (issue 35; docs/xmtp.md, *The node profile*).

A database whose identity was made with ``tessera xmtp identity new --node URL`` is
an XMTP client: an inbox with this database's installation in it (:mod:`.inbox`),
KeyPackages in libxmtp's form on the node (:mod:`.registration`), the identity
updates of the inboxes it meets, verified and kept (:mod:`.identity_updates`), and
groups and DMs it makes and changes by commits libxmtp accepts (:mod:`.creating`,
:mod:`.committing`; issue 36).
The shared libraries do the protocol (``protocols/libraries/xmtp_identity``,
``xmtp_mls``, ``xmtp_content``); this package keeps their values sealed in the
database and does the network work between transactions.
"""
