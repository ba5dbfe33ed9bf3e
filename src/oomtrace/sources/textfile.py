"""A saved kernel log: dmesg output, journalctl text or JSON, kern.log; plain or compressed."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import sys
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace
from datetime import UTC, datetime, tzinfo
from typing import IO, Any

from oomtrace.episodes import REPEAT_GAP_S
from oomtrace.errors import InputError
from oomtrace.events import EarlyWarning
from oomtrace.parse import parse_record
from oomtrace.prefilter import Prefilter
from oomtrace.prefixes import LineSplitter
from oomtrace.records import Record
from oomtrace.sources import chunks
from oomtrace.sources.base import Source

_JOURNAL_MAGIC = b"LPKSHHRH"
_COMPRESSED: tuple[tuple[bytes, Callable[..., Any]], ...] = (
    (b"\x1f\x8b", gzip.open),
    (b"\xfd7zXZ\x00", lzma.open),
    (b"BZh", bz2.open),
)
# Share of NUL and other control bytes in the first block above which a file is binary.
_BINARY_SHARE = 0.10


class KernelLogFile(Source):
    """A file (or `-` for standard input) holding kernel log lines in any of the known shapes."""

    kind = "file"

    def __init__(
        self,
        path: str,
        zone: tzinfo,
        year: int | None = None,
        boot_time: datetime | None = None,
    ) -> None:
        self.path = path
        self.name = "<stdin>" if path == "-" else path
        self.zone = zone
        self.year = year
        self._boot_time = boot_time

    def boot_time(self) -> datetime | None:
        return self._boot_time

    lines_read: int | None = None
    """Lines in the file, when the fast path read only some of them (else each was a record)."""

    def records(self) -> Iterator[Record]:
        splitter = LineSplitter(self.name, zone=self.zone, reference=self._reference_time(), year=self.year)
        if _fast_path_fits(self.path):
            yield from _fast_records(self, splitter)
            return
        line_no = 0
        with self._open() as text:
            for line_no, line in enumerate(text, start=1):
                yield from splitter.split(line, line_no)
                if not line_no & 0xFFFF:
                    self._report(_position(text))
        self.lines_read = line_no  # rsyslog's #012 makes several records of one line
        if line_no == 0:
            raise InputError(
                f"{self.name} is empty",
                hint="nothing was captured; for the boot that crashed try: journalctl -k -b -1 > kern.txt",
            )

    def size(self) -> int | None:
        try:
            return os.path.getsize(self.path) if self.path != "-" else None
        except OSError:
            return None

    def _reference_time(self) -> datetime:
        """Syslog stamps carry no year: the file's modification time supplies it."""
        if self.path != "-":
            try:
                return datetime.fromtimestamp(os.stat(self.path).st_mtime, UTC)
            except OSError:
                pass
        return datetime.now(UTC)

    def _open(self) -> IO[str]:
        return open_text(self.path)


def open_text(path: str, what: str = "kernel log") -> IO[str]:
    """A text stream over a log file or `-`, decompressed, refusing journals and binaries."""
    name = "<stdin>" if path == "-" else path
    raw = _open_binary(path)
    head = raw.peek(8192)[:8192]
    for magic, opener in _COMPRESSED:
        if head.startswith(magic):
            raw = io.BufferedReader(opener(raw, "rb"))
            head = _safe_peek(raw, name)
            break
    if head.startswith(_JOURNAL_MAGIC):
        raw.close()
        raise InputError(
            f"{name} is a binary systemd journal file, not a text log",
            hint=f"export it with: journalctl --file {name} -k -o short-precise > kern.txt",
        )
    if _looks_binary(head):
        raw.close()
        raise InputError(
            f"{name} looks binary, not a text {what}",
            hint="pass dmesg, journalctl or /var/log/kern.log output"
            if what == "kernel log"
            else "pass the server's own log (its captured stdout/stderr)",
        )
    # Only \n ends a line: a lone \r inside a name stays in it (and is shown inert).
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="\n")


def _open_binary(path: str) -> io.BufferedReader:
    if path == "-":
        # peek() needs a BufferedReader; CliRunner and pipes may hand over other streams.
        stream = sys.stdin.buffer
        return stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)  # type: ignore[arg-type]
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"cannot read {path}: no such file") from None
    except IsADirectoryError:
        raise InputError(
            f"cannot read {path}: it is a directory",
            hint="pass a log file such as /var/log/kern.log",
        ) from None
    except PermissionError:
        raise InputError(
            f"cannot read {path}: permission denied",
            hint="run with sudo, or copy the file somewhere readable",
        ) from None
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None


def _position(text: IO[str]) -> int:
    """Bytes read so far from the file under a text stream (compressed: of the compressed file)."""
    buffer = getattr(text, "buffer", None)
    raw = getattr(buffer, "raw", buffer)
    inner = getattr(raw, "fileobj", None) or getattr(raw, "_fp", None) or raw
    try:
        return int(inner.tell()) if inner is not None else 0
    except (OSError, ValueError, AttributeError):
        return 0


def _safe_peek(raw: io.BufferedReader, name: str) -> bytes:
    try:
        return raw.peek(8192)[:8192]
    except (OSError, EOFError, lzma.LZMAError) as error:
        raise InputError(f"cannot decompress {name}: {error}") from None


def _looks_binary(head: bytes) -> bool:
    """Binary, not a log with a run of NULs (what a crash leaves in a file being appended to)."""
    # NULs are left out of the count: a crash can leave any amount of them in a text log, and a
    # file of nothing else is refused later as holding no log lines.
    text = head.replace(b"\x00", b"")
    if not text:
        return False
    control = sum(1 for b in text if b < 9 or 13 < b < 32)
    return control / len(text) > _BINARY_SHARE


# Files at least this big are scanned in chunks first (OOMTRACE_FAST_MIN_BYTES overrides it).
FAST_MIN_BYTES = 64 * 1024 * 1024
# Lines always read in full at the start: the format, the first stamp.
HEAD_LINES = 100


def _fast_path_fits(path: str) -> bool:
    """A big, plain, seekable file, with the scanning libraries installed: worth the chunk scan."""
    if path == "-" or not chunks.available():
        return False
    minimum = int(os.environ.get("OOMTRACE_FAST_MIN_BYTES", FAST_MIN_BYTES))
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size < minimum:
            return False
        with open(path, "rb") as probe:
            head = probe.read(8192)
    except OSError:
        return False
    compressed = any(head.startswith(magic) for magic, _ in _COMPRESSED)
    return not compressed and not head.startswith(_JOURNAL_MAGIC) and not _looks_binary(head)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").rstrip("\r\n")


def _fast_records(source: KernelLogFile, splitter: LineSplitter) -> Iterator[Record]:
    """The head in full, then chunk by chunk only anchor lines, the reports they open, and Xids."""
    prefilter = Prefilter()
    line_no = 0
    offset = 0
    with open(source.path, "rb") as file:
        for raw in file:
            line_no += 1
            offset += len(raw)
            text = _decode(raw)
            prefilter.wants(text)
            yield from splitter.split(text, line_no)
            if line_no >= HEAD_LINES and not prefilter.in_region:
                break
    reader = _ChunkReader(splitter, prefilter)
    total = line_no
    last: chunks.Chunk | None = None
    for chunk in chunks.chunks(source.path, offset, line_no + 1):
        source._report(chunk.offset)
        yield from reader.read(chunk)
        total = chunk.first_line - 1 + chunk.line_count
        last = chunk
    if last is not None and total > reader.last_line:
        # The last line too, so the span the report states is the file's whole span.
        tail = last.data.splitlines()
        if tail:
            yield from splitter.split(_decode(tail[-1]), total)
    source.lines_read = total


class _ChunkReader:
    """Hands the lines of each chunk that matter to the splitter, in file order."""

    def __init__(self, splitter: LineSplitter, prefilter: Prefilter) -> None:
        self.splitter = splitter
        self.prefilter = prefilter
        self.last_line = 0

    def read(self, chunk: chunks.Chunk) -> Iterator[Record]:
        position = 0  # lines before this offset are dealt with
        if self.prefilter.in_region:
            position = yield from self._region(chunk, 0)
        for start in chunk.anchor_lines:
            if start < position:
                continue  # inside a report read above
            yield from self._xids(chunk, position, start)
            raw, position = chunk.line_at(start)
            text = _decode(raw)
            if self.prefilter.wants(text):
                yield from self._split(text, chunk.line_no(start))
                if self.prefilter.in_region:
                    position = yield from self._region(chunk, position)
        yield from self._xids(chunk, position, len(chunk.data))

    def _region(self, chunk: chunks.Chunk, position: int) -> Generator[Record, None, int]:
        """The lines of a report, from `position` to its kill line or the chunk's end."""
        line_no = chunk.line_no(position)
        while position < len(chunk.data) and self.prefilter.in_region:
            raw, position = chunk.line_at(position)
            text = _decode(raw)
            self.prefilter.wants(text)
            yield from self._split(text, line_no)
            line_no += 1
        return position

    def _split(self, text: str, line_no: int) -> list[Record]:
        self.last_line = max(self.last_line, line_no)
        return self.splitter.split(text, line_no)

    def _xids(self, chunk: chunks.Chunk, low: int, high: int) -> Iterator[Record]:
        """The Xid lines that start in [low, high) (both line starts): counted, or read."""
        offsets, groups = chunk.xids_between(low, high)
        if groups:
            counted = self._count(chunk, groups)
            if counted is not None:
                yield from counted
                return
        known = None
        for offset in offsets:
            start = chunk.line_start(offset)
            if known is not None and start == known[0]:
                continue  # a second Xid on the same line
            text = _decode(chunk.line_at(start)[0])
            if self.prefilter.wants(text):
                known = (start, chunk.line_no(start, known))
                yield from self._split(text, known[1])

    def _count(self, chunk: chunks.Chunk, groups: list[Any]) -> list[Record] | None:
        """The first and last Xid line of each code, the last standing for the lines between.

        None (and the splitter as it was) when counting could differ from reading every line:
        lines of another host between, or a gap long enough to split the warning run.
        """
        picks: list[tuple[int, int]] = []  # (line start, lines it stands for before it)
        for group in groups:
            picks.append((chunk.line_start(int(group[0])), 0))
            if len(group) > 1:
                picks.append((chunk.line_start(int(group[-1])), len(group) - 2))
        picks.sort()
        saved = replace(self.splitter, _boot_ids=dict(self.splitter._boot_ids))
        records: dict[int, Record] = {}
        known = None
        for start, _ in picks:
            known = (start, chunk.line_no(start, known))
            split = self.splitter.split(_decode(chunk.line_at(start)[0]), known[1])
            if len(split) != 1:
                break
            records[start] = split[0]
        else:
            if all(_same_run(chunk, group, records) for group in groups):
                self.last_line = max(self.last_line, *(record.line_no for record in records.values()))
                return [
                    replace(records[start], repeats=repeats) if repeats else records[start]
                    for start, repeats in picks
                ]
        self.splitter = saved
        return None


def _same_run(chunk: chunks.Chunk, group: Any, records: dict[int, Record]) -> bool:
    """Would every line of this group join one warning run, as reading them one by one would?"""
    first = records[chunk.line_start(int(group[0]))]
    last = records[chunk.line_start(int(group[-1]))]
    event, last_event = parse_record(first), parse_record(last)
    if not isinstance(event, EarlyWarning) or not isinstance(last_event, EarlyWarning):
        return False
    if (event.kind, event.key, first.host) != (last_event.kind, last_event.key, last.host):
        return False
    if first.host is not None and not _all_name_host(chunk, group, first.host):
        return False
    a, b = first.stamp, last.stamp
    if a.wall is not None and b.wall is not None:
        gap = (b.wall - a.wall).total_seconds()
    elif a.uptime is not None and b.uptime is not None and a.boot == b.boot:
        gap = b.uptime - a.uptime
    else:
        return a.wall is None and a.uptime is None and b.wall is None and b.uptime is None
    # Lines in between can only be closer together than the span from first to last.
    return 0 <= gap <= REPEAT_GAP_S


def _all_name_host(chunk: chunks.Chunk, group: Any, host: str) -> bool:
    """Does every Xid line of the group come from `host`? (Another host's lines could sit between.)"""
    name = f" {host} ".encode()
    data = chunk.data
    first = int(group[0])
    head = data[chunk.line_start(first) : first]
    # Usually the host and tag end the prefix (" gb10 kernel: "): one vectorised comparison.
    tail = head[head.find(name) :] if name in head else b""
    if tail and chunk.all_preceded_by(group, tail):
        return True
    return all(data.find(name, data.rfind(b"\n", 0, xid) + 1, xid) >= 0 for xid in group.tolist())
