"""HPKE's LabeledExtract and LabeledExpand (RFC 9180 section 4), shared by the KEMs and HPKE."""

from __future__ import annotations

from .kdf import Kdf

_VERSION = b"HPKE-v1"


def labeled_extract(kdf: Kdf, suite_id: bytes, salt: bytes, label: bytes, ikm: bytes) -> bytes:
    """``Extract(salt, "HPKE-v1" || suite_id || label || ikm)``."""
    return kdf.extract(salt, _VERSION + suite_id + label + ikm)


def labeled_expand(kdf: Kdf, suite_id: bytes, prk: bytes, label: bytes, info: bytes, length: int) -> bytes:
    """``Expand(prk, I2OSP(L, 2) || "HPKE-v1" || suite_id || label || info, L)``."""
    labeled_info = length.to_bytes(2, "big") + _VERSION + suite_id + label + info
    return kdf.expand(prk, labeled_info, length)
