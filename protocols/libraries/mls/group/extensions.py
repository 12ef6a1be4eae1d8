"""Reading and checking the extensions of a group context or a leaf (RFC 9420 sections 7.2, 11, 13.4).

Extensions travel as ``(type, bytes)`` pairs; those RFC 9420 defines are
decoded here when the group logic needs them.  Any other type is carried as
it is, and a group may use it only when every member lists it in its
capabilities: that is how a plugin adds its own (Marmot's group data).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from ..codec import decode
from ..messages import Extension, ExtensionType, ExternalSender, ExternalSenders, LeafNode, RequiredCapabilities
from ..tree.validation import DEFAULT_EXTENSIONS, check_required_capabilities
from .refusals import UnsupportedExtension

T = TypeVar("T")


def check_unique(extensions: Sequence[Extension], where: str) -> None:
    """Refuse a list that names one extension type twice (RFC 9420 section 13.4)."""
    seen: set[int] = set()
    for extension in extensions:
        if extension.extension_type in seen:
            raise UnsupportedExtension(f"{where} has extension type {extension.extension_type} twice")
        seen.add(extension.extension_type)


def find(extensions: Iterable[Extension], extension_type: int) -> bytes | None:
    """The data of the extension of ``extension_type``, or ``None``."""
    return next((e.extension_data for e in extensions if e.extension_type == extension_type), None)


def decoded(extensions: Iterable[Extension], extension_type: int, form: type[T]) -> T | None:
    """The extension of ``extension_type`` decoded as ``form``, or ``None`` when absent."""
    data = find(extensions, extension_type)
    return None if data is None else decode(form, data)


def required_capabilities(extensions: Iterable[Extension]) -> RequiredCapabilities | None:
    """The group's ``required_capabilities``, if it has them."""
    return decoded(extensions, ExtensionType.REQUIRED_CAPABILITIES, RequiredCapabilities)


def external_senders(extensions: Iterable[Extension]) -> tuple[ExternalSender, ...]:
    """The group's ``external_senders``, empty when it has none."""
    found = decoded(extensions, ExtensionType.EXTERNAL_SENDERS, ExternalSenders)
    return () if found is None else found.external_senders


def unsupported_by(leaf: LeafNode, extensions: Iterable[Extension]) -> list[int]:
    """The extension types of ``extensions`` that ``leaf`` does not support."""
    supported = DEFAULT_EXTENSIONS | set(leaf.capabilities.extensions)
    return sorted({e.extension_type for e in extensions} - supported)


def check_group_extensions(extensions: Sequence[Extension], members: Iterable[tuple[int, LeafNode]]) -> None:
    """Every member must support every group context extension, and what ``required_capabilities`` names."""
    check_unique(extensions, "the group context")
    required = required_capabilities(extensions)
    for index, leaf in members:
        missing = unsupported_by(leaf, extensions)
        if missing:
            raise UnsupportedExtension(f"member {index} does not support group extensions {missing}")
        if required is not None:
            check_required_capabilities(f"member {index}", leaf, required)
