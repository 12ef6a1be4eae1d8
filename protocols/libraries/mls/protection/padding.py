"""How many zero bytes a PrivateMessage's content is padded with (RFC 9420 section 6.3.1).

Padding hides the exact length of what a member sends.  A sender chooses it
per message: a fixed count of zero bytes, or a :data:`PaddingRule` that
looks at the unpadded length (content and authentication, encoded), such as
:func:`pad_to_multiple`.  Receivers accept any length of padding but only
zero bytes, which the wire codec enforces.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import InvalidArgument

#: The unpadded plaintext length to the number of zero bytes to append.
PaddingRule = Callable[[int], int]


def pad_to_multiple(block: int) -> PaddingRule:
    """A rule padding the plaintext up to the next multiple of ``block`` bytes."""
    if type(block) is not int or block < 1:
        raise InvalidArgument(f"a padding block is a positive number of bytes, not {block!r}")

    def rule(length: int) -> int:
        return -length % block

    return rule


def padding_length(padding: int | PaddingRule, unpadded: int) -> int:
    """The number of zero bytes ``padding`` asks for after ``unpadded`` bytes of plaintext."""
    count = padding if isinstance(padding, int) else padding(unpadded)
    if type(count) is not int or count < 0:
        raise InvalidArgument(f"padding must be a non-negative number of bytes, not {count!r}")
    return count
