"""The RFC 9420 ratchet tree and TreeKEM, one concept per module.

:mod:`.math` (array-tree index math), :mod:`.node` and :mod:`.leaf_node` (nodes,
leaf signatures), :mod:`.ratchet_tree` (the immutable tree value and its
changes), :mod:`.tree_hash` and :mod:`.parent_hash` (hashes cached per node),
:mod:`.validation` (leaves and whole received trees), :mod:`.operations`
(applying a commit's proposals), and TreeKEM: :mod:`.path_secret`,
:mod:`.private_tree` (a member's node keys), :mod:`.update_path` and
:mod:`.treekem`.  Errors are in :mod:`.errors`.
"""
