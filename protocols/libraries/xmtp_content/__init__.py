"""XMTP content and group context, as libxmtp v1.10.0 writes them: content types, the plaintext envelope, and the
group extensions (membership, metadata, mutable metadata, permission policies) with libxmtp's permission rules.

- :mod:`.content_type` names content types (``xmtp.org/text:1.0``).
- :mod:`.encoded` reads and writes EncodedContent, compression included.
- :mod:`.codecs` turns EncodedContent into text, reactions, replies, group updates and remote attachments (one module
  each under :mod:`.content`), and anything else into :class:`~.codecs.UnknownContent`, never dropped.
- :mod:`.envelope` frames content as an application message's plaintext and computes libxmtp's message id.
- :mod:`.group_context` holds the membership and metadata extensions, :mod:`.policies` the permission policies and
  their presets, :mod:`.group_state` all four extensions of a group at once, :mod:`.permissions` the rules a
  commit is checked by.

docs/xmtp-content.md describes each type, extension and rule.
"""
