"""EncodedContent bytes from libxmtp's own compatibility fixtures, quoted as literals.

Source: xmtp/libxmtp v1.10.0, crates/xmtp_content_types/fixtures/serialized_content.json
(base64 of EncodedContent, written by the JavaScript SDK and read by libxmtp's
``compatibility_test.rs``).  Each entry: (description there, base64).
"""

from __future__ import annotations

TEXT = [
    ("Simple text message", "ChIKCHhtdHAub3JnEgR0ZXh0GAESEQoIZW5jb2RpbmcSBVVURi04Ig1IZWxsbywgV29ybGQh"),
    (
        "Text with emoji",
        "ChIKCHhtdHAub3JnEgR0ZXh0GAESEQoIZW5jb2RpbmcSBVVURi04Ih1IZWxsbyEg8J+RiyBIb3cgYXJlIHlvdT8g8J+Yig==",
    ),
]
REACTION_V1 = [
    (
        "Reaction without optional referenceInboxId",
        (
            "ChYKCHhtdHAub3JnEghyZWFjdGlvbhgBIlN7ImFjdGlvbiI6ImFkZGVkIiwicmVmZXJlbmNlIjoibWVzc2FnZS1pZC0xMjMiLCJzY2hl"
            "bWEiOiJ1bmljb2RlIiwiY29udGVudCI6IvCfkY0ifQ=="
        ),
    ),
    (
        "Reaction with optional referenceInboxId",
        (
            "ChYKCHhtdHAub3JnEghyZWFjdGlvbhgBInl7ImFjdGlvbiI6InJlbW92ZWQiLCJyZWZlcmVuY2UiOiJtZXNzYWdlLWlkLTQ1NiIsInJl"
            "ZmVyZW5jZUluYm94SWQiOiJpbmJveC1pZC03ODkiLCJzY2hlbWEiOiJ1bmljb2RlIiwiY29udGVudCI6IuKdpO+4jyJ9"
        ),
    ),
    (
        "Reaction with custom schema",
        (
            "ChYKCHhtdHAub3JnEghyZWFjdGlvbhgBImB7ImFjdGlvbiI6ImFkZGVkIiwicmVmZXJlbmNlIjoibWVzc2FnZS1pZC1hYmMiLCJzY2hl"
            "bWEiOiJjdXN0b20iLCJjb250ZW50IjoiY3VzdG9tLXJlYWN0aW9uLWlkIn0="
        ),
    ),
]
REPLY = [
    (
        "Reply without optional referenceInboxId",
        (
            "ChMKCHhtdHAub3JnEgVyZXBseRgBEiAKC2NvbnRlbnRUeXBlEhF4bXRwLm9yZy90ZXh0OjEuMBIgCglyZWZlcmVuY2USE29yaWdpbmFs"
            "LW1lc3NhZ2UtaWQiOAoSCgh4bXRwLm9yZxIEdGV4dBgBEhEKCGVuY29kaW5nEgVVVEYtOCIPVGhpcyBpcyBhIHJlcGx5"
        ),
    ),
    (
        "Reply with optional referenceInboxId",
        (
            "ChMKCHhtdHAub3JnEgVyZXBseRgBEiAKC2NvbnRlbnRUeXBlEhF4bXRwLm9yZy90ZXh0OjEuMBIgCglyZWZlcmVuY2USE29yaWdpbmFs"
            "LW1lc3NhZ2UtaWQSIwoQcmVmZXJlbmNlSW5ib3hJZBIPc2VuZGVyLWluYm94LWlkIjwKEgoIeG10cC5vcmcSBHRleHQYARIRCghlbmNv"
            "ZGluZxIFVVRGLTgiE1JlcGx5IHdpdGggaW5ib3ggSUQ="
        ),
    ),
]
GROUP_UPDATED = [
    (
        "Group name updated",
        "ChsKCHhtdHAub3JnEg1ncm91cF91cGRhdGVkGAEiLQoJaW5ib3gtMTIzIiAKCmdyb3VwX25hbWUSCE9sZCBOYW1lGghOZXcgTmFtZQ==",
    ),
    (
        "Members added to group",
        "ChsKCHhtdHAub3JnEg1ncm91cF91cGRhdGVkGAEiLQoLYWRtaW4taW5ib3gSDgoMbmV3LW1lbWJlci0xEg4KDG5ldy1tZW1iZXItMg==",
    ),
    (
        "Members removed from group",
        "ChsKCHhtdHAub3JnEg1ncm91cF91cGRhdGVkGAEiIQoLYWRtaW4taW5ib3gaEgoQcmVtb3ZlZC1tZW1iZXItMQ==",
    ),
]
REMOTE_ATTACHMENT = [
    (
        "Remote attachment without optional fields",
        (
            "CiQKCHhtdHAub3JnEhZyZW1vdGVTdGF0aWNBdHRhY2htZW50GAESUQoNY29udGVudERpZ2VzdBJAYWJjZDEyMzQ1Njc4OTBhYmNkMTIz"
            "NDU2Nzg5MGFiY2QxMjM0NTY3ODkwYWJjZDEyMzQ1Njc4OTBhYmNkMTIzNBJICgRzYWx0EkAwMjAyMDIwMjAyMDIwMjAyMDIwMjAyMDIw"
            "MjAyMDIwMjAyMDIwMjAyMDIwMjAyMDIwMjAyMDIwMjAyMDIwMjAyEiEKBW5vbmNlEhgwMzAzMDMwMzAzMDMwMzAzMDMwMzAzMDMSSgoG"
            "c2VjcmV0EkAwMTAxMDEwMTAxMDEwMTAxMDEwMTAxMDEwMTAxMDEwMTAxMDEwMTAxMDEwMTAxMDEwMTAxMDEwMTAxMDEwMTAxEg8KBnNj"
            "aGVtZRIFaHR0cHMSFQoNY29udGVudExlbmd0aBIEMTAyNBIKCghmaWxlbmFtZSIcaHR0cHM6Ly9leGFtcGxlLmNvbS9maWxlLnBkZg=="
        ),
    ),
    (
        "Remote attachment with optional filename",
        (
            "CiQKCHhtdHAub3JnEhZyZW1vdGVTdGF0aWNBdHRhY2htZW50GAESUQoNY29udGVudERpZ2VzdBJAZWZnaDU2Nzg5MDEyMzRlZmdoNTY3"
            "ODkwMTIzNGVmZ2g1Njc4OTAxMjM0ZWZnaDU2Nzg5MDEyMzRlZmdoNTY3OBJICgRzYWx0EkAwNTA1MDUwNTA1MDUwNTA1MDUwNTA1MDUw"
            "NTA1MDUwNTA1MDUwNTA1MDUwNTA1MDUwNTA1MDUwNTA1MDUwNTA1EiEKBW5vbmNlEhgwNjA2MDYwNjA2MDYwNjA2MDYwNjA2MDYSSgoG"
            "c2VjcmV0EkAwNDA0MDQwNDA0MDQwNDA0MDQwNDA0MDQwNDA0MDQwNDA0MDQwNDA0MDQwNDA0MDQwNDA0MDQwNDA0MDQwNDA0Eg8KBnNj"
            "aGVtZRIFaHR0cHMSFQoNY29udGVudExlbmd0aBIEMjA0OBIiCghmaWxlbmFtZRIWaW1wb3J0YW50LWRvY3VtZW50LnBkZiIgaHR0cHM6"
            "Ly9leGFtcGxlLmNvbS9kb2N1bWVudC5wZGY="
        ),
    ),
]
# Types this library has no codec for: they must come back as UnknownContent, whole.
OTHER = [
    ("Read receipt", "ChkKCHhtdHAub3JnEgtyZWFkUmVjZWlwdBgB"),
    (
        "Transaction without metadata",
        "CiIKCHhtdHAub3JnEhR0cmFuc2FjdGlvblJlZmVyZW5jZRgBIi57InJlZmVyZW5jZSI6IjB4NDU2ZGVmLi4uIiwibmV0d29ya0lkIjoiMHg4OSJ9",
    ),
]
