"""Make a shared library's too-new glibc symbol versions optional, so it loads on an older glibc.

MDK's prebuilt ``libmdk_uniffi.so`` names ``GLIBC_2.39`` only for two
symbols it already references weakly (``pidfd_spawnp``, ``pidfd_getpid``:
Rust's standard library calls them only when they resolve).  The dynamic
loader still refuses the whole file on glibc < 2.39, because the version
requirement itself is mandatory.  Two edits fix that without touching code:

* the ``GLIBC_2.39`` entry of ``.gnu.version_r`` gets the ``VER_FLG_WEAK``
  flag, so a missing version is no longer fatal;
* each symbol bound to that version gets versym 1 (global, unversioned) in
  ``.gnu.version``, so the loader looks it up by name alone and, finding
  nothing, leaves the weak reference null.

Only ELF64 little-endian files are understood.  A symbol that needs a too-new
version *strongly* is refused: weakening it would only move the failure from
load time to the first call.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator
from pathlib import Path

from attrs import frozen

VER_FLG_WEAK = 0x2
VERSYM_GLOBAL = 1
_VERSYM_INDEX_MASK = 0x7FFF  # the top bit marks a hidden definition, not part of the index
_SHN_UNDEF = 0
_STB_WEAK = 2
_GLIBC_VERSION = re.compile(r"GLIBC_(\d+)\.(\d+)(?:\.(\d+))?")

_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_VERNEED = struct.Struct("<HHIII")
_VERNAUX = struct.Struct("<IHHII")
_VERSYM = struct.Struct("<H")
_VNA_FLAGS_OFFSET = 4  # vna_hash (u32) comes first

SECTION_TYPES = {
    ".dynsym": 11,  # SHT_DYNSYM
    ".dynstr": 3,  # SHT_STRTAB
    ".gnu.version": 0x6FFFFFFF,  # SHT_GNU_versym
    ".gnu.version_r": 0x6FFFFFFE,  # SHT_GNU_verneed
}


class NotPatchable(ValueError):
    """The file is not an ELF64 little-endian shared object this patcher understands, or patching would not help."""


@frozen
class Section:
    """One section header: its name, type, and where its bytes lie in the file."""

    name: str
    type: int
    offset: int
    size: int


@frozen
class NeededVersion:
    """One ``Vernaux`` entry of ``.gnu.version_r``: a symbol version required from a library.

    Attributes:
        library: the file that must provide it (``libc.so.6``).
        name: the version (``GLIBC_2.39``).
        index: the versym value that symbols bound to this version carry.
        flags: ``vna_flags`` (``VER_FLG_WEAK`` set means optional).
        offset: the file offset of this ``Vernaux`` entry.
    """

    library: str
    name: str
    index: int
    flags: int
    offset: int

    @property
    def weak(self) -> bool:
        return bool(self.flags & VER_FLG_WEAK)

    @property
    def flags_offset(self) -> int:
        return self.offset + _VNA_FLAGS_OFFSET


@frozen
class DynamicSymbol:
    """One ``.dynsym`` entry with its ``.gnu.version`` value.

    Attributes:
        name: the symbol's name.
        weak: bound weakly (``STB_WEAK``).
        undefined: imported from another object (``SHN_UNDEF``).
        version_index: its versym value without the hidden bit.
        versym_offset: the file offset of its 2-byte versym entry.
    """

    name: str
    weak: bool
    undefined: bool
    version_index: int
    versym_offset: int


@frozen
class Edit:
    """Two bytes to overwrite at ``offset``: what is there now and what goes there."""

    offset: int
    before: bytes
    after: bytes


@frozen
class Plan:
    """What weakening changes: the versions made optional, the symbols unversioned, and the byte edits."""

    versions: tuple[str, ...]
    symbols: tuple[str, ...]
    edits: tuple[Edit, ...]


# --- reading -------------------------------------------------------------------------


def running_glibc() -> tuple[int, ...] | None:
    """The running C library's glibc version, e.g. ``(2, 36)``; ``None`` when it is not glibc."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        return None
    match = re.fullmatch(r"glibc (\d+(?:\.\d+)*)", text or "")
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def glibc_version_of(name: str) -> tuple[int, ...] | None:
    """``(2, 39)`` for ``GLIBC_2.39``; ``None`` for any other version name (``GCC_3.0``, ``GLIBC_PRIVATE``)."""
    match = _GLIBC_VERSION.fullmatch(name)
    return tuple(int(part) for part in match.groups() if part is not None) if match else None


def _unpack(layout: struct.Struct, data: bytes, offset: int, what: str) -> tuple:
    if offset < 0 or offset + layout.size > len(data):
        raise NotPatchable(
            f"{what} at offset {offset} runs past the end of the file ({len(data)} bytes); is it truncated?"
        )
    return layout.unpack_from(data, offset)


def _check_elf64_le(data: bytes) -> tuple:
    header = _unpack(_ELF_HEADER, data, 0, "the ELF header")
    ident = header[0]
    if ident[:4] != b"\x7fELF":
        raise NotPatchable("not an ELF file (no \\x7fELF magic)")
    if ident[4] != 2 or ident[5] != 1:
        raise NotPatchable(f"only ELF64 little-endian files are supported (class {ident[4]}, data {ident[5]})")
    return header


def _c_string(data: bytes, start: int, end: int, what: str) -> str:
    if not 0 <= start < end:
        raise NotPatchable(f"{what} points outside its string table")
    stop = data.find(b"\0", start, end)
    if stop < 0:
        raise NotPatchable(f"{what} is not NUL-terminated inside its string table")
    return data[start:stop].decode("utf-8", "replace")


def read_sections(data: bytes) -> dict[str, Section]:
    """The file's sections by name, from its section header table."""
    header = _check_elf64_le(data)
    shoff, shentsize, shnum, shstrndx = header[6], header[11], header[12], header[13]
    if shnum == 0 or shentsize != _SECTION_HEADER.size or shstrndx >= shnum:
        raise NotPatchable("the file has no usable section header table (stripped of section headers?)")
    raw = [_unpack(_SECTION_HEADER, data, shoff + i * shentsize, f"section header {i}") for i in range(shnum)]
    names = raw[shstrndx]
    names_start, names_end = names[4], names[4] + names[5]
    sections = {}
    for i, (name_at, type_, _, _, offset, size, *_rest) in enumerate(raw):
        name = _c_string(data, names_start + name_at, names_end, f"the name of section {i}")
        if type_ != 8 and offset + size > len(data):  # SHT_NOBITS takes no file space
            raise NotPatchable(f"section {name} runs past the end of the file; is it truncated?")
        sections[name] = Section(name, type_, offset, size)
    return sections


def _required_sections(data: bytes) -> dict[str, Section]:
    sections = read_sections(data)
    for name, type_ in SECTION_TYPES.items():
        if name not in sections:
            raise NotPatchable(f"the file has no {name} section, so it names no symbol versions to weaken")
        if sections[name].type != type_:
            raise NotPatchable(f"section {name} has type {sections[name].type:#x}, expected {type_:#x}")
    return sections


def _dynstr(data: bytes, sections: dict[str, Section], at: int, what: str) -> str:
    table = sections[".dynstr"]
    return _c_string(data, table.offset + at, table.offset + table.size, what)


def _chain(data: bytes, start: int, layout: struct.Struct, next_field: int, what: str) -> Iterator[tuple[int, tuple]]:
    """Walk a linked list of entries whose ``next_field`` is the byte distance to the next one."""
    offset, seen = start, set()
    while True:
        if offset in seen:
            raise NotPatchable(f"the {what} entries link back into a loop")
        seen.add(offset)
        entry = _unpack(layout, data, offset, f"a {what} entry")
        yield offset, entry
        if entry[next_field] == 0:
            return
        offset += entry[next_field]


def needed_versions(data: bytes) -> list[NeededVersion]:
    """Every symbol version the file requires, from ``.gnu.version_r``."""
    sections = _required_sections(data)
    start = sections[".gnu.version_r"].offset
    found = []
    for need_at, need in _chain(data, start, _VERNEED, 4, "version-need"):
        library = _dynstr(data, sections, need[2], "a version-need file name")
        aux_count = 0
        for aux_at, aux in _chain(data, need_at + need[3], _VERNAUX, 4, "version-need aux"):
            name = _dynstr(data, sections, aux[3], "a version name")
            found.append(NeededVersion(library, name, aux[2], aux[1], aux_at))
            aux_count += 1
        if aux_count != need[1]:
            raise NotPatchable(f"{library} lists {aux_count} version entries but claims {need[1]}")
    return found


def dynamic_symbols(data: bytes) -> list[DynamicSymbol]:
    """Every ``.dynsym`` entry with its versym value."""
    sections = _required_sections(data)
    dynsym, versym = sections[".dynsym"], sections[".gnu.version"]
    count = dynsym.size // _SYMBOL.size
    if versym.size != count * _VERSYM.size:
        raise NotPatchable(f".gnu.version has {versym.size} bytes for {count} symbols; expected {count * 2}")
    symbols = []
    for i in range(count):
        name_at, info, _, shndx, _, _ = _unpack(_SYMBOL, data, dynsym.offset + i * _SYMBOL.size, f"symbol {i}")
        versym_offset = versym.offset + i * _VERSYM.size
        (version,) = _unpack(_VERSYM, data, versym_offset, f"the versym of symbol {i}")
        name = _dynstr(data, sections, name_at, f"the name of symbol {i}")
        symbols.append(
            DynamicSymbol(
                name, info >> 4 == _STB_WEAK, shndx == _SHN_UNDEF, version & _VERSYM_INDEX_MASK, versym_offset
            )
        )
    return symbols


# --- planning and applying -----------------------------------------------------------


def plan(data: bytes, running: tuple[int, ...]) -> Plan:
    """The edits that make every glibc version newer than ``running`` optional; empty when none is needed.

    Raises :class:`NotPatchable` for a file this patcher cannot read, and for
    a symbol that needs a too-new version without being a weak import.
    """
    too_new = [v for v in needed_versions(data) if (glibc_version_of(v.name) or ()) > running]
    by_index = {v.index: v for v in too_new}
    bound = [s for s in dynamic_symbols(data) if s.version_index in by_index]
    strong = [s.name for s in bound if not (s.weak and s.undefined)]
    if strong:
        needed = by_index[next(s.version_index for s in bound if not (s.weak and s.undefined))].name
        raise NotPatchable(
            f"{', '.join(strong)} need {needed} and are not weak imports: this library cannot run on glibc "
            f"{'.'.join(map(str, running))} however its versions are marked; use a build for this glibc"
        )
    edits = [_flag_edit(data, v) for v in too_new if not v.weak]
    edits += [_edit(data, s.versym_offset, VERSYM_GLOBAL) for s in bound]
    return Plan(tuple(v.name for v in too_new), tuple(s.name for s in bound), tuple(edits))


def _edit(data: bytes, offset: int, value: int) -> Edit:
    return Edit(offset, data[offset : offset + 2], _VERSYM.pack(value))


def _flag_edit(data: bytes, version: NeededVersion) -> Edit:
    return _edit(data, version.flags_offset, version.flags | VER_FLG_WEAK)


def apply(data: bytes, edits: tuple[Edit, ...]) -> bytes:
    """``data`` with ``edits`` made; each edit's ``before`` bytes must be what is there."""
    patched = bytearray(data)
    for edit in edits:
        if patched[edit.offset : edit.offset + len(edit.before)] != edit.before:
            raise NotPatchable(f"the bytes at offset {edit.offset} changed since the plan was made")
        patched[edit.offset : edit.offset + len(edit.after)] = edit.after
    return bytes(patched)


def weaken_too_new_glibc(path: Path, running: tuple[int, ...] | None = None) -> Plan:
    """Patch the file at ``path`` in place so it loads on ``running`` glibc (default: this machine's).

    Idempotent: a patched file plans no edits and is not rewritten.  Without
    glibc (``running`` unknown) nothing is done.  The file is replaced
    atomically, so a concurrent reader sees the old or the new bytes, never a mix.
    """
    running = running or running_glibc()
    data = path.read_bytes()
    if running is None:
        return Plan((), (), ())
    changes = plan(data, running)
    if changes.edits:
        staging = path.with_name(path.name + ".weakening")
        staging.write_bytes(apply(data, changes.edits))
        staging.chmod(path.stat().st_mode)
        staging.replace(path)
    return changes
