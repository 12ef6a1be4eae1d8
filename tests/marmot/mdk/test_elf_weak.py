"""The glibc-version weakening patch, checked on MDK's real ``libmdk_uniffi.so`` (as the wheel ships it)."""

from __future__ import annotations

import hashlib
import itertools
import struct
from pathlib import Path

import pytest

from tests.marmot.mdk import elf_weak
from tests.marmot.mdk.mdk_peer import LIBRARY, ORIGINAL

OLD_GLIBC = (2, 36)
WEAK_IMPORTS = ("pidfd_spawnp", "pidfd_getpid")


@pytest.fixture(scope="module")
def original(mdk_install: Path) -> bytes:
    return (mdk_install / ORIGINAL).read_bytes()


def _version(data: bytes, name: str) -> elf_weak.NeededVersion:
    return next(v for v in elf_weak.needed_versions(data) if v.name == name and v.library == "libc.so.6")


def _differing_offsets(before: bytes, after: bytes, candidates: list[int]) -> set[int]:
    """Offsets where the files differ, checked in full: everything between the candidate edits must be equal."""
    assert len(before) == len(after)
    bounds = [0, *sorted(candidates), len(before)]
    for start, end in itertools.pairwise(bounds):
        gap = start + 2 if start in candidates else start
        assert before[gap:end] == after[gap:end], f"bytes changed between offsets {gap} and {end}"
    return {offset for offset in candidates if before[offset : offset + 2] != after[offset : offset + 2]}


def test_the_shipped_library_needs_glibc_2_39_only_for_two_weak_imports(original: bytes) -> None:
    needed = _version(original, "GLIBC_2.39")
    assert not needed.weak
    bound = [s for s in elf_weak.dynamic_symbols(original) if s.version_index == needed.index]
    assert sorted(s.name for s in bound) == sorted(WEAK_IMPORTS)
    assert all(s.weak and s.undefined for s in bound)


def test_the_patch_flags_the_version_weak_and_unversions_its_symbols_and_changes_nothing_else(original: bytes) -> None:
    plan = elf_weak.plan(original, OLD_GLIBC)
    patched = elf_weak.apply(original, plan.edits)

    assert plan.versions == ("GLIBC_2.39",)
    assert sorted(plan.symbols) == sorted(WEAK_IMPORTS)
    before, after = _version(original, "GLIBC_2.39"), _version(patched, "GLIBC_2.39")
    assert after.flags == before.flags | elf_weak.VER_FLG_WEAK
    others = [(v.name, v.library, v.flags) for v in elf_weak.needed_versions(original) if v.name != "GLIBC_2.39"]
    assert others == [(v.name, v.library, v.flags) for v in elf_weak.needed_versions(patched) if v.name != "GLIBC_2.39"]
    old_symbols, new_symbols = elf_weak.dynamic_symbols(original), elf_weak.dynamic_symbols(patched)
    changed = {new.name: new.version_index for old, new in zip(old_symbols, new_symbols, strict=True) if old != new}
    assert changed == dict.fromkeys(WEAK_IMPORTS, elf_weak.VERSYM_GLOBAL)
    edits = [edit.offset for edit in plan.edits]
    assert _differing_offsets(original, patched, edits) == set(edits)


def test_patching_twice_changes_nothing_the_second_time(original: bytes, tmp_path: Path) -> None:
    library = tmp_path / "lib.so"
    library.write_bytes(original)
    first = elf_weak.weaken_too_new_glibc(library, OLD_GLIBC)
    once = library.read_bytes()
    second = elf_weak.weaken_too_new_glibc(library, OLD_GLIBC)

    assert first.edits and not second.edits
    assert second.symbols == () and second.versions == ("GLIBC_2.39",)
    assert library.read_bytes() == once


def test_a_new_enough_glibc_needs_no_patch(original: bytes) -> None:
    for running in ((2, 39), (2, 40), (3, 0)):
        assert elf_weak.plan(original, running) == elf_weak.Plan((), (), ())


def test_the_cached_library_is_the_original_with_exactly_this_patch(original: bytes, mdk_install: Path) -> None:
    running = elf_weak.running_glibc()
    assert running is not None, "these tests run on glibc"
    expected = elf_weak.apply(original, elf_weak.plan(original, running).edits)
    cached = (mdk_install / "site" / LIBRARY).read_bytes()
    assert hashlib.sha256(cached).digest() == hashlib.sha256(expected).digest()


def test_running_glibc_is_read_from_confstr() -> None:
    running = elf_weak.running_glibc()
    assert running is not None and running >= (2, 17)


@pytest.mark.parametrize(
    ("name", "version"),
    [("GLIBC_2.39", (2, 39)), ("GLIBC_2.2.5", (2, 2, 5)), ("GLIBC_PRIVATE", None), ("GCC_3.0", None)],
)
def test_glibc_version_names(name: str, version: tuple[int, ...] | None) -> None:
    assert elf_weak.glibc_version_of(name) == version


# --- refusals ------------------------------------------------------------------------


def _with(data: bytes, offset: int, replacement: bytes) -> bytes:
    return data[:offset] + replacement + data[offset + len(replacement) :]


def _renamed_section(data: bytes, name: bytes, new_name: bytes) -> bytes:
    names = elf_weak.read_sections(data)[".shstrtab"]
    at = data.index(b"\0" + name + b"\0", names.offset, names.offset + names.size) + 1
    return _with(data, at, new_name)


def _strongly_bound(data: bytes, symbol: str) -> bytes:
    sections = elf_weak.read_sections(data)
    found = next(s for s in elf_weak.dynamic_symbols(data) if s.name == symbol)
    index = (found.versym_offset - sections[".gnu.version"].offset) // 2
    info_at = sections[".dynsym"].offset + index * 24 + 4
    binding_global, type_func = 1, 2
    return _with(data, info_at, struct.pack("<B", binding_global << 4 | type_func))


REFUSALS = {
    "not ELF": (lambda data: b"#!/bin/sh\n" + data[10:], "not an ELF file"),
    "ELF32": (lambda data: _with(data, 4, b"\x01"), "only ELF64 little-endian"),
    "big-endian": (lambda data: _with(data, 5, b"\x02"), "only ELF64 little-endian"),
    "truncated": (lambda data: data[: len(data) // 2], "truncated"),
    "no version needs": (
        lambda data: _renamed_section(data, b".gnu.version_r", b".gnu.versi0n_r"),
        "no .gnu.version_r section",
    ),
    "no versym": (lambda data: _renamed_section(data, b".gnu.version", b".gnu.versi0n"), "no .gnu.version section"),
    "strong import": (lambda data: _strongly_bound(data, "pidfd_spawnp"), "pidfd_spawnp need GLIBC_2.39"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refuses_what_it_cannot_patch_safely(original: bytes, case: str) -> None:
    damage, message = REFUSALS[case]
    with pytest.raises(elf_weak.NotPatchable, match=message):
        elf_weak.plan(damage(original), OLD_GLIBC)


def test_a_file_that_is_not_patchable_is_left_alone(tmp_path: Path) -> None:
    script = tmp_path / "script.so"
    script.write_bytes(b"#!/bin/sh\necho hi\n" * 10)
    with pytest.raises(elf_weak.NotPatchable):
        elf_weak.weaken_too_new_glibc(script, OLD_GLIBC)
    assert script.read_bytes() == b"#!/bin/sh\necho hi\n" * 10
