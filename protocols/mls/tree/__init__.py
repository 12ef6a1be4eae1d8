"""The RFC 9420 ratchet tree: array-tree index math (:mod:`.math`)."""
