"""Cut a big log (a file, or what a decompressor gives) into line-aligned chunks and find, in
each, the lines worth parsing.

Three libraries do the per-byte work so that Python only touches the few lines that matter:
Hyperscan finds every anchor literal of `prefilter.ANCHORS` in one pass (and says whether the
chunk holds an NVRM Xid line at all), numpy counts the newlines (for line numbers) and reads
the Xid codes, and stringzilla finds the Xid lines. Hyperscan and numpy release the GIL, so a
pool of threads scans chunks ahead while the caller parses. Xid lines get no Hyperscan
callback: a noisy driver prints hundreds of thousands of them, and a callback per line contends
for the GIL with the parsing thread. Their offsets and codes become numpy arrays, so their
repeats can be counted.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections import deque
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

# All three ship wheels for Linux on x86_64 and aarch64. Where one is missing this module does not
# import, and textfile reads every line instead (linebyline.py).
import hyperscan
import numpy as np
import stringzilla

from oomtrace.frozen import Frozen, replace
from oomtrace.prefilter import ANCHORS, XID_ANCHOR, literal_database
from oomtrace.sources.base import DAMAGED
from oomtrace.sources.lines import MAX_LINE_BYTES, line_bound
from oomtrace.sources.logbytes import READ_BYTES

CHUNK_BYTES = 2 << 20
# How far a chunk's reader looks past each edge for the newline that ends the line there.
_PEEK_BYTES = 4096
# mallopt parameter numbers (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# Scanning threads (at most four: past that the parsing thread cannot keep up), and chunks
# scanned ahead of the one being parsed: enough to keep the cores busy while memory stays a few
# chunks whatever the file's size.
SCAN_THREADS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))
READ_AHEAD = 2 * SCAN_THREADS
_XID = XID_ANCHOR.encode()
# The Xid code follows the PCI address within this many bytes; its digits within _CODE_BYTES.
_CLOSE_WITHIN = 48
_CODE_BYTES = 8


class Chunk(Frozen):
    """Whole lines of the file from `offset`, with what the scan found in them."""

    offset: int
    data: bytes
    first_line: int
    """Line number of the chunk's first line (1-based)."""
    newline_count: int
    anchor_lines: tuple[int, ...]
    """Start offsets of the lines holding an anchor other than the Xid one, ascending."""
    xid_starts: Any
    """Offsets of every Xid anchor in `data` (a numpy array, ascending)."""
    xid_groups: tuple[Any, ...] | None
    """The Xid anchor offsets by Xid code, one numpy array per code; None when some code could
    not be read here (cut, odd or long) or a line holds two Xids: then read them one by one."""
    cut_lines: int = 0
    """Lines longer than their bound (lines.line_bound), cut to it here (the rest was
    skipped, not kept)."""
    cut_json: int = 0
    """Of those, JSON lines."""
    skipped_bytes: int = 0

    @property
    def line_count(self) -> int:
        return self.newline_count + (bool(self.data) and not self.data.endswith(b"\n"))

    def line_no(
        self, offset: int, known: tuple[int, int] | None = None, after: tuple[int, int] | None = None
    ) -> int:
        """Line number of the line holding `offset` (an offset within the chunk).

        Counts the newlines from the nearest point whose line number is known: the chunk's start,
        its end, `known`, an (offset, line number) pair of an earlier line of this chunk, or
        `after`, one of a later line (counting back from it).
        """
        data = self.data
        nearest = min(offset, len(data) - offset)  # from the chunk's start or end
        forward = offset - known[0] if known is not None and known[0] <= offset else nearest + 1
        back = after[0] - offset if after is not None and after[0] >= offset else nearest + 1
        if after is not None and back < min(nearest, forward):
            return after[1] - data.count(b"\n", offset, after[0])
        if known is not None and forward <= nearest:
            return known[1] + data.count(b"\n", known[0], offset)
        if offset <= len(data) - offset:
            return self.first_line + data.count(b"\n", 0, offset)
        return self.first_line + self.newline_count - data.count(b"\n", offset)

    def xids_between(self, low: int, high: int) -> tuple[Any, list[Any] | None]:
        """The Xid anchors on the lines that start in [low, high) (both line starts): their
        offsets, and the same grouped by code (None when the codes could not be read); numpy
        arrays."""
        if low == 0 and high >= len(self.data):  # the usual case: a chunk with no anchor line
            groups = list(self.xid_groups) if self.xid_groups is not None else None
            return self.xid_starts, groups
        first, stop = self.xid_starts.searchsorted((low, high)).tolist()
        offsets = self.xid_starts[first:stop]
        if self.xid_groups is None or first == stop:
            return offsets, None
        # One search for both ends, and plain ints to slice with (about half the time).
        ends = [group.searchsorted((low, high)).tolist() for group in self.xid_groups]
        return offsets, [group[a:b] for group, (a, b) in zip(self.xid_groups, ends, strict=True) if a < b]

    def all_preceded_by(self, offsets: Any, tag: bytes) -> bool:
        """Do the bytes just before each of these Xid anchor offsets (a numpy array) spell `tag`?"""
        if not len(offsets) or int(offsets[0]) < len(tag):
            return False
        first, last = int(offsets[0]), int(offsets[-1])
        # Usually every Xid line of the stretch has the same prefix: then one count of `tag`
        # and the anchor together answers (a gather of every offset's bytes cost a quarter of
        # the parsing thread's time on a 1 GiB `journalctl -k` text).
        between = self.xid_starts.searchsorted((first, last + 1))
        together = stringzilla.count(self.data, tag + _XID, first - len(tag), last + len(_XID))
        if together == int(between[1] - between[0]):
            return True
        array = np.frombuffer(self.data, dtype=np.uint8)
        before = array[(offsets - len(tag))[:, None] + np.arange(len(tag))]
        return bool((before == np.frombuffer(tag, dtype=np.uint8)).all())

    def line_start(self, offset: int) -> int:
        return self.data.rfind(b"\n", 0, offset) + 1

    def line_at(self, start: int) -> tuple[bytes, int]:
        """The line starting at `start`, without its newline, and where the next line starts."""
        end = self.data.find(b"\n", start)
        if end < 0:
            return self.data[start:], len(self.data)
        return self.data[start:end], end + 1


def chunks(path: str, start: int, first_line: int) -> Iterator[Chunk]:
    """The file from byte `start` (where line `first_line` begins) to its end, chunk by chunk."""
    _keep_freed_memory()
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        # Each thread reads its own chunk with pread (no shared file position, no mapping: a
        # mapped file would count towards our resident memory as it is read).
        reader = _FileReader(file.fileno(), start, size)
        with ThreadPoolExecutor(SCAN_THREADS, thread_name_prefix="oomtrace-scan") as pool:
            jobs = (pool.submit(reader.scan, index) for index in range(reader.count))
            yield from _in_order(jobs, first_line)


class _Stream(Protocol):
    def read1(self, size: int = ..., /) -> bytes: ...


def stream_chunks(stream: _Stream, offset: int, first_line: int, carry: bytes = b"") -> Iterator[Chunk]:
    """The rest of a stream (a decompressor) from `offset` in it, chunk by chunk: read here, in
    order, and scanned in the pool's threads. When a read fails (a cut or damaged compressed
    file), every whole line before the damage is yielded first, then the error is raised."""
    _keep_freed_memory()
    failures: list[BaseException] = []
    with ThreadPoolExecutor(SCAN_THREADS, thread_name_prefix="oomtrace-scan") as pool:
        yield from _in_order(_block_jobs(pool, stream, offset, failures, carry), first_line)
    if failures:
        raise failures[0]


def _block_jobs(
    pool: ThreadPoolExecutor, stream: _Stream, offset: int, failures: list[BaseException], carry: bytes
) -> Iterator[Future[Chunk]]:
    """Scans of the stream's blocks cut at their last newline, submitted one by one as the
    caller asks; a read that fails ends them, its error left in `failures`. `carry`: what an
    earlier reader of the stream read past its last line."""
    skipping = False  # inside an overlong line, after the part kept of it
    cut_lines = cut_json = skipped = 0
    while not failures:
        block, failure = _read_block(stream)
        if failure is not None:
            # The whole lines of `carry` and of this block are still scanned, even when the
            # read failed at once: a decompressor may give all a cut file holds before it
            # tells of the cut (the fuzzer found 1,158 lines lost so).
            failures.append(failure)
        elif not block:
            break
        if skipping:
            newline = block.find(b"\n")
            skipped += len(block) if newline < 0 else newline
            if newline < 0:
                continue
            block, skipping = block[newline:], False
        data = carry + block
        cut = data.rfind(b"\n") + 1
        carry, data = data[cut:], data[:cut]
        if len(carry) > MAX_LINE_BYTES and len(carry) > (bound := line_bound(carry)):
            # A line longer than any log's: keep its start, skip the rest as it streams past.
            skipped += len(carry) - bound
            carry, skipping = carry[:bound], True
            cut_lines += 1
            cut_json += bound > MAX_LINE_BYTES
        if data:
            yield pool.submit(_scan, offset, data, cut_lines, cut_json, skipped)
            offset += len(data)
            cut_lines = cut_json = skipped = 0
    if carry and not failures:  # a last line with no newline (a cut one is dropped)
        yield pool.submit(_scan, offset, carry)


def _in_order(jobs: Iterator[Future[Chunk]], first_line: int) -> Iterator[Chunk]:
    """The scanned chunks in file order, numbered from `first_line`, with at most READ_AHEAD
    scans submitted ahead of the one being parsed (so memory stays a few chunks)."""
    pending: deque[Future[Chunk]] = deque()
    line = first_line
    for job in jobs:
        pending.append(job)
        if len(pending) >= READ_AHEAD:
            line = yield from _take(pending, line)
    while pending:
        line = yield from _take(pending, line)


def _read_block(stream: _Stream) -> tuple[bytes, BaseException | None]:
    """About CHUNK_BYTES of the stream, and the error that stopped it early, if one did (what was
    read before it is kept: one read() of the whole block would drop it with the error)."""
    parts: list[bytes] = []
    size = 0
    try:
        while size < CHUNK_BYTES:
            # The same reads as the line-by-line path makes (READ_BYTES): a decompressor that
            # meets damage loses what that one read decoded, so with 2 MiB reads this path lost
            # up to 2 MiB more lines before the damage than the other. 64 KiB is as fast as 2 MiB.
            piece = stream.read1(READ_BYTES)
            if not piece:
                break
            parts.append(piece)
            size += len(piece)
    except DAMAGED as error:
        return b"".join(parts), error
    return b"".join(parts), None


def _keep_freed_memory() -> None:
    """Ask glibc to reuse freed chunk buffers instead of handing them back to the kernel.

    Each chunk is a fresh `bytes` of a few MiB (pread, or a decompressor's output), freed a
    moment later. By default glibc maps such blocks anew or trims them off its heap on free, and
    touching fresh pages costs a page fault per 4 KiB: measured here, that made reading 1 GiB
    take 0.55 s instead of 0.16 s.
    Resident memory stays bounded all the same: only a few chunks are alive at once.
    """
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt): slower, still right
        return
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    mallopt(_M_TRIM_THRESHOLD, 256 << 20)


def _take(pending: deque[Future[Chunk]], line: int) -> Generator[Chunk, None, int]:
    """The oldest chunk, numbered from `line` (known only once the chunks before it are counted)."""
    scanned = pending.popleft().result()
    if not scanned.data:
        return line  # a stretch inside a line that began in an earlier chunk
    yield replace(scanned, first_line=line)
    return line + scanned.newline_count


class _Workspace(Frozen):
    """What one scanning thread reuses from chunk to chunk."""

    scratch: Any
    """Hyperscan's scratch space: one per thread."""
    newlines: Any


class _FileReader:
    """Reads and scans chunk number i of a file, in any of the pool's threads.

    Chunk i holds the lines that start in [start + i * CHUNK_BYTES, start + (i + 1) * CHUNK_BYTES),
    so each thread finds its chunk's edges by itself: a line that is longer than a chunk belongs
    whole to the chunk it starts in, and the chunks it covers are empty.
    """

    def __init__(self, fd: int, start: int, size: int) -> None:
        self.fd = fd
        self.start = start
        self.size = size
        self.count = max(0, -(-(size - start) // CHUNK_BYTES))

    def scan(self, index: int) -> Chunk:
        return _scan(*self._read(self.start + index * CHUNK_BYTES))

    def _read(self, begin: int) -> tuple[int, bytes, int, int, int]:
        """(file offset, bytes) of the lines that start in this chunk's range, whole."""
        end = min(begin + CHUNK_BYTES, self.size)
        exact = self._exact(begin, end)
        if exact is not None:
            return exact
        if begin > self.start:
            # Read one byte early: a line starts at `begin` only if a newline ends the one before.
            data = os.pread(self.fd, end - begin + 1, begin - 1)
            newline = data.find(b"\n")
            if newline < 0:
                return begin, b"", 0, 0, 0  # inside a line that started in an earlier chunk
            begin, data = begin + newline, data[newline + 1 :]
            if begin >= end:
                return begin, b"", 0, 0, 0  # no line starts in this chunk's range
        else:
            data = os.pread(self.fd, end - begin, begin)
        if end < self.size and not data.endswith(b"\n"):
            partial = data[data.rfind(b"\n") + 1 :]
            bound = line_bound(partial)
            rest, skipped = self._rest_of_line(end, bound - len(partial))
            return begin, data + rest, int(skipped > 0), int(skipped > 0 and bound > MAX_LINE_BYTES), skipped
        return begin, data, 0, 0, 0

    def _exact(self, begin: int, end: int) -> tuple[int, bytes, int, int, int] | None:
        """The usual case in one read: where the first line starting in [begin, end) starts and
        where the line after the range starts, each found by peeking at a few KiB, then exactly
        those bytes. (Reading the range and then cutting and joining its edges copied each
        chunk twice more: a fifth of the scan.) None for a line longer than a peek or than
        MAX_LINE_BYTES at either edge: `_read` then cuts it as it always did."""
        first = self._next_line_start(begin) if begin > self.start else begin
        last = self._next_line_start(end) if end < self.size else end
        if first is None or last is None:
            return None
        if first >= end:
            return first, b"", 0, 0, 0  # no line starts in this chunk's range
        data = os.pread(self.fd, last - first, first)
        if len(data) != last - first:
            return None  # the file shrank under us: the careful path says what it finds
        if len(data) - data.rfind(b"\n", 0, len(data) - 1) - 1 > MAX_LINE_BYTES:
            return None
        return first, data, 0, 0, 0

    def _next_line_start(self, position: int) -> int | None:
        """The first line start at or after `position` (a line starts there if a newline ends
        the byte before), or None if none is within _PEEK_BYTES."""
        peek = os.pread(self.fd, _PEEK_BYTES, position - 1)
        newline = peek.find(b"\n")
        return position + newline if newline >= 0 else None

    def _rest_of_line(self, position: int, room: int) -> tuple[bytes, int]:
        """The rest of the line at `position`, at most `room` bytes of it kept (with its newline),
        and how many bytes were skipped: the chunks after skip what lies inside the line."""
        parts = []
        skipped = 0
        while position < self.size:
            block = os.pread(self.fd, 1 << 16, position)
            if not block:
                break
            newline = block.find(b"\n")
            piece = block if newline < 0 else block[: newline + 1]
            keep = max(0, min(len(piece), room))
            parts.append(piece[:keep])
            room -= keep
            skipped += len(piece) - keep
            if newline >= 0:
                break
            position += len(block)
        data = b"".join(parts)
        if skipped and not data.endswith(b"\n"):
            data += b"\n"
        return data, skipped


def _scan(offset: int, data: bytes, cut_lines: int = 0, cut_json: int = 0, skipped_bytes: int = 0) -> Chunk:
    """What the chunk at `offset` holds: anchor lines (Hyperscan), newlines (numpy), Xid lines
    (stringzilla) and their codes (numpy)."""
    work = _workspace(len(data))
    found = _Found()
    if data:
        _anchor_database().scan(data, match_event_handler=_found, context=found, scratch=work.scratch)
    # numpy counts the newlines: it lets go of the GIL while it does (stringzilla's count is
    # as fast but holds it, and the parsing thread waited: measured 5-10 % slower overall).
    array = np.frombuffer(data, dtype=np.uint8)
    newlines = np.equal(array, ord("\n"), out=work.newlines[: len(data)])
    if found.xid:
        xids = _xid_starts(data)
        groups = _xid_groups(array, newlines, xids)
    else:  # Hyperscan saw no Xid anchor: none to find (most chunks of a quiet log)
        xids, groups = _NO_OFFSETS, ()
    return Chunk(
        offset=offset,
        data=data,
        first_line=0,  # numbered by _take, once the chunks before it are counted
        newline_count=int(np.count_nonzero(newlines)),
        anchor_lines=tuple(sorted({data.rfind(b"\n", 0, end) + 1 for end in found.ends})),
        xid_starts=xids,
        xid_groups=groups,
        cut_lines=cut_lines,
        cut_json=cut_json,
        skipped_bytes=skipped_bytes,
    )


_threads = threading.local()  # each scanning thread keeps its own _Workspace


def _workspace(size: int) -> _Workspace:
    """This thread's scratch space, big enough for `size` bytes (reused: fresh buffers for every
    chunk would cost a page fault per 4 KiB, more than the scan itself)."""
    work: _Workspace | None = getattr(_threads, "work", None)
    if work is None or len(work.newlines) < size:
        scratch = work.scratch if work is not None else hyperscan.Scratch(_anchor_database())
        capacity = max(size, CHUNK_BYTES + (1 << 16))
        work = _Workspace(scratch, np.empty(capacity, dtype=bool))
        _threads.work = work
    return work


@functools.cache
def _anchor_database() -> Any:
    """Every anchor, compiled once per process. The Xid anchor is reported once per chunk at
    most (HS_FLAG_SINGLEMATCH): that it is there is all the scan needs from Hyperscan; numpy
    then finds every Xid line's offset (a callback per Xid line would cost more than the scan)."""
    literals = [anchor for anchor in ANCHORS if anchor != XID_ANCHOR]
    return literal_database(
        [*literals, XID_ANCHOR], ids=[*range(len(literals)), _XID_ID], once=[False] * len(literals) + [True]
    )


_XID_ID = 1 << 30  # the Xid anchor's id in the database: apart from the others' 0, 1, 2...
_NO_OFFSETS = np.empty(0, dtype=np.intp)


class _Found:
    """What Hyperscan's callback gathers in one chunk."""

    __slots__ = ("ends", "xid")

    def __init__(self) -> None:
        self.ends: list[int] = []
        self.xid = False


def _found(id_: int, _start: int, end: int, _flags: int, found: _Found) -> None:
    if id_ == _XID_ID:
        found.xid = True
    else:
        found.ends.append(end)


def _xid_starts(data: bytes) -> Any:
    """Offsets of every Xid anchor in the chunk (a numpy array). stringzilla's SIMD search, one
    call an Xid line: a third of what numpy's whole-chunk passes cost (a byte compare, then
    flatnonzero, then a check per byte of the anchor), measured on a 1 GiB log."""
    text = stringzilla.Str(data)
    offsets = []
    found = text.find(_XID)
    while found >= 0:
        offsets.append(found)
        found = text.find(_XID, found + len(_XID))
    return np.array(offsets, dtype=np.intp)


def _xid_groups(array: Any, mask: Any, starts: Any) -> tuple[Any, ...] | None:
    """Xid anchor offsets grouped by code, read as `parse` reads it: the digits after "): "."""
    if not len(starts):
        return ()
    if len(starts) > 1 and not np.logical_or.reduceat(mask, starts)[:-1].all():
        return None  # two Xids on one line
    close = _address_ends(array, starts + len(_XID))
    if close is None:
        return None
    if (_at(array, close + 1) != ord(":")).any() or (_at(array, close + 2) != ord(" ")).any():
        return None
    window = _at(array, (close + 3)[:, None] + np.arange(_CODE_BYTES))
    digits = (window >= ord("0")) & (window <= ord("9"))
    length = np.argmin(digits, axis=1)  # digits before the first non-digit
    if (length == 0).any() or digits.all(axis=1).any():
        return None
    codes = np.where(np.arange(_CODE_BYTES) < length[:, None], window, 0).view(np.uint64).ravel()
    return tuple(starts[codes == code] for code in np.unique(codes))


def _address_ends(array: Any, addresses: Any) -> Any:
    """Where each Xid's PCI address ends: its first ")", on its line; None if one has none near."""
    # One driver prints one address format: try the first line's layout on every line at once.
    width = bytes(array[addresses[0] : addresses[0] + _CLOSE_WITHIN]).find(b")")
    if width >= 0:
        before = _at(array, addresses[:, None] + np.arange(width))
        if (_at(array, addresses + width) == ord(")")).all() and not (
            (before == ord(")")) | (before == ord("\n"))
        ).any():
            return addresses + width
    after = _at(array, addresses[:, None] + np.arange(_CLOSE_WITHIN))
    is_close = after == ord(")")
    if not is_close.any(axis=1).all():
        return None
    first_close = np.argmax(is_close, axis=1)
    newline = after == ord("\n")
    first_newline = np.where(newline.any(axis=1), np.argmax(newline, axis=1), _CLOSE_WITHIN)
    if (first_newline < first_close).any():
        return None
    return addresses + first_close


def _at(array: Any, index: Any) -> Any:
    """array[index], reading past the chunk's end as newlines (its last line ends there)."""
    if not index.size or index.max() < len(array):
        return array[index]
    return np.where(index < len(array), array[np.minimum(index, len(array) - 1)], ord("\n")).astype(np.uint8)
