"""RFC 9420 message protection: PublicMessage and PrivateMessage, protect and unprotect (section 6).

- :mod:`.view`: :class:`EpochView`, what a member knows of one epoch
  (GroupContext, membership key, sender-data secret, secret tree, the
  signature key of each leaf).
- :mod:`.signing`: signing and verifying framed content over
  ``FramedContentTBS`` (section 6.1), and a commit's confirmation tag.
- :mod:`.public`: PublicMessages with the membership tag (section 6.2).
- :mod:`.private`: PrivateMessages: padded content sealed with the secret
  tree's ratchets and a reuse guard, sender data sealed with a key from the
  ciphertext sample (section 6.3); :mod:`.sender_data` and
  :mod:`.padding` hold those two parts.
- :mod:`.message`: :func:`unprotect` for an MLSMessage of either kind.

Sending a commit: :func:`sign_own_content`, then the transcript hash and key
schedule give the confirmation tag for :func:`with_confirmation_tag`, then
:func:`protect_public` or :func:`protect_private`.  Every function is pure;
those that use up a ratchet key return the view that replaces the old one.
No repr or error shows a secret.
"""

from .errors import ContentNotAllowed, MembershipTagMismatch, NotFramedContent, UnknownSender, WrongGroup
from .message import unprotect
from .padding import PaddingRule, pad_to_multiple, padding_length
from .private import protect_private, ratchet_kind, unprotect_private
from .public import membership_tag, protect_public, public_message, unprotect_public
from .signing import SIGN_LABEL, sign_content, sign_own_content, verify_content, with_confirmation_tag
from .view import EpochView, SignatureKeys

__all__ = [
    "SIGN_LABEL",
    "ContentNotAllowed",
    "EpochView",
    "MembershipTagMismatch",
    "NotFramedContent",
    "PaddingRule",
    "SignatureKeys",
    "UnknownSender",
    "WrongGroup",
    "membership_tag",
    "pad_to_multiple",
    "padding_length",
    "protect_private",
    "protect_public",
    "public_message",
    "ratchet_kind",
    "sign_content",
    "sign_own_content",
    "unprotect",
    "unprotect_private",
    "unprotect_public",
    "verify_content",
    "with_confirmation_tag",
]
