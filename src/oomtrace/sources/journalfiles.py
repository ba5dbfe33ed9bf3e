"""The journal files a query reads, checked one by one: which can be read together, which only apart.

libsystemd reads a directory's files as one merged journal and skips, without a word, a file cut
short (smaller than its header says). A file whose kernel index is damaged (the entry array that
`_TRANSPORT=kernel` points to, overwritten in a copy) is worse: a read that matches on the
transport silently loses that file's kernel entries, while `journalctl -D` with no match, walking
every entry, still shows them. Such files are read apart, every entry walked; a cut file from a
copy whose header is mended to end at the cut, so that libsystemd reads what is there.
"""

from __future__ import annotations

import glob
import mmap
import os
import shutil
import struct
from collections.abc import Callable, Iterator

from oomtrace.frozen import Frozen

_SIGNATURE = b"LPKSHHRH"
# A journal file's header (systemd's journal-def.h): its size at byte 88, its arena's at 96, the
# offset of its last object at 136; from header size 264 on, the last entry array at 256 (0: none
# known, so a reader finds it from the head).
_HEADER = struct.Struct("<8s80xQQ")
_ARENA_SIZE_AT = 96
_TAIL_OBJECT_AT = 136
_TAIL_ENTRY_ARRAY_AT = 256
_OBJECT_SIZE = struct.Struct("<Q")  # an object's size, 8 bytes into its header


class KernelTail(Frozen):
    """A file's last kernel entry, found walking back from its end."""

    realtime_us: int
    host: str
    boot: str
    indexed: bool = True
    """Whether a read matching _TRANSPORT=kernel finds it (False: the kernel index is damaged)."""


class JournalFile(Frozen):
    path: str
    problem: str | None = None
    """What is wrong with it, for the summary; None for a sound file."""
    apart: bool = False
    """Read on its own, every entry walked: its kernel index is damaged, or it is cut short."""
    cut: bool = False
    """Smaller than its header says: read from a copy mended to end at the cut."""
    skipped: bool = False
    """Not read at all: unreadable, or not a journal file."""
    tail: KernelTail | None = None
    """Its last kernel entry, found walking back from its end: a read that ends before it was
    stopped by a damaged entry (libsystemd ends a walk there without a word)."""

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


def journal_paths(directory: str | None, files: tuple[str, ...]) -> list[str]:
    if files:
        return list(files)
    if directory:
        return sorted(glob.glob(os.path.join(glob.escape(directory), "**", "*.journal*"), recursive=True))
    return []


def journal_files_under(directory: str) -> Iterator[str]:
    """Every file under `directory` that a read of it may open: each name holding `.journal`, at
    any depth, through linked folders. More than journal_paths' glob, which libsystemd's reader
    of the folder goes beyond: it opens hidden `.x.journal` and archived `.journal~` files too."""
    walked: set[tuple[int, int]] = set()
    for folder, folders, names in os.walk(directory, followlinks=True):
        try:
            info = os.stat(folder)
        except OSError:
            folders.clear()
            continue
        if (info.st_dev, info.st_ino) in walked:
            folders.clear()  # a link back to a folder already walked: a loop
            continue
        walked.add((info.st_dev, info.st_ino))
        yield from (os.path.join(folder, name) for name in names if ".journal" in name)


def survey(paths: list[str], kernel_tail: Callable[[str], KernelTail | None]) -> tuple[JournalFile, ...]:
    """Each file's header checked, and the last kernel entry and kernel index of each sound one."""
    found = []
    for path in paths:
        file = _header_check(path)
        tail = kernel_tail(path) if file.problem is None else None
        if tail is not None:
            file = JournalFile(path, tail=tail)
        if tail is not None and not tail.indexed:
            file = JournalFile(
                path,
                f"{file.name} has a damaged kernel index (a match on _TRANSPORT=kernel loses entries "
                "there): read on its own, every entry walked",
                apart=True,
                tail=tail,
            )
        found.append(file)
    return tuple(found)


def _header_check(path: str) -> JournalFile:
    name = os.path.basename(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEADER.size)
            size = os.fstat(handle.fileno()).st_size
    except OSError as error:
        return JournalFile(path, f"{name} skipped: {error.strerror or error}", skipped=True)
    if len(head) < _HEADER.size or not head.startswith(_SIGNATURE):
        return JournalFile(path, f"{name} skipped: not a journal file", skipped=True)
    _, header_size, arena_size = _HEADER.unpack(head)
    if size < header_size + arena_size:
        return JournalFile(
            path,
            f"{name} is cut short ({size:,} of {header_size + arena_size:,} bytes)",
            apart=True,
            cut=True,
        )
    return JournalFile(path)


def mended_copy(path: str, folder: str) -> str | None:
    """A copy of a cut journal file whose header ends its arena at the last whole object, which
    libsystemd opens and reads up to the cut; None if the file has no whole object past its header."""
    copy = os.path.join(folder, os.path.basename(path))
    shutil.copyfile(path, copy)
    with open(copy, "r+b") as handle:
        head = handle.read(_HEADER.size)
        header_size = _HEADER.unpack(head)[1]
        size = os.fstat(handle.fileno()).st_size
        end = header_size + ((size - header_size) & ~7)
        if end <= header_size + 16:
            return None
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            tail = _last_whole_object(data, header_size, end)
        if tail is None:
            return None
        handle.seek(_ARENA_SIZE_AT)
        handle.write(struct.pack("<Q", end - header_size))
        handle.seek(_TAIL_OBJECT_AT)
        handle.write(struct.pack("<Q", tail))
        if header_size >= _TAIL_ENTRY_ARRAY_AT + 8:
            handle.seek(_TAIL_ENTRY_ARRAY_AT)
            handle.write(struct.pack("<II", 0, 0))
    return copy


def _last_whole_object(data: mmap.mmap, start: int, end: int) -> int | None:
    """The offset of the last object that ends before `end`, walking them from the header on
    (objects are 8-byte aligned, each with its size; a zero size is the unwritten rest)."""
    at, last = start, None
    while at + 16 <= end:
        (size,) = _OBJECT_SIZE.unpack_from(data, at + 8)
        if size < 16 or at + size > end:
            break
        last = at
        at += (size + 7) & ~7
    return last


_ENTRY = 3
_ENTRY_ORDER = struct.Struct("<QQ")  # an entry's seqnum and realtime, 16 bytes into it


def entry_out_of_order(path: str) -> int | None:
    """The offset of the first entry object whose sequence number or time is out of order with
    both its neighbours' (overwritten: what ends libsystemd's walk there), walking every object
    from the header on; None if none is, or the file cannot be walked. Asked only of a file
    whose read stopped short: it reads the whole file."""
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            header_size, arena_size = _HEADER.unpack_from(data)[1:]
            end = min(len(data), header_size + arena_size)
            entries: list[tuple[int, int, int]] = []
            at = header_size
            while at + 32 <= end:
                (size,) = _OBJECT_SIZE.unpack_from(data, at + 8)
                if size < 16:
                    break
                if data[at] == _ENTRY:
                    entries.append((at, *_ENTRY_ORDER.unpack_from(data, at + 16)))
                at += (size + 7) & ~7
    except (OSError, ValueError, struct.error):
        return None
    for before, (at, seqnum, realtime), after in zip(entries, entries[1:], entries[2:], strict=False):
        if not before[1] < seqnum < after[1] or realtime > max(before[2], after[2]):
            return at
    return None


def host_groups(paths: list[str], hosts_of: Callable[[str], list[str]]) -> list[list[str]]:
    """The files, in groups that share no host: a journal-remote store's one file (or rotated
    few) per host. Each group is read merged, one after the other: libsystemd merging forty
    files entry by entry spends most of its time mapping and unmapping their windows."""
    groups: list[tuple[set[str], list[str]]] = []
    for path in paths:
        hosts = set(hosts_of(path))
        joined = [group for group in groups if group[0] & hosts]
        groups = [group for group in groups if not group[0] & hosts]
        groups.append((hosts.union(*(g[0] for g in joined)), [p for g in joined for p in g[1]] + [path]))
    return [files for _, files in groups]
