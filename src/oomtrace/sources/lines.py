"""A log's lines as they are read, each bounded in length, and what was cut on the way.

Both reading paths share these bounds: the line-by-line path reads through BoundedLines, the
chunk scan (chunks.py) cuts an overlong line with `line_bound` as BoundedLines does, so the two
keep the same lines. Imports only logbytes below it, never a reader.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from oomtrace.errors import InputError
from oomtrace.sources.logbytes import READ_BYTES, LogBytes, not_a_log_hint, open_bytes
from oomtrace.sources.sniff import ByteStream


def open_text(path: str, what: str = "kernel log") -> BoundedLines:
    """The lines of a log file or `-`, decompressed, refusing journals and binaries."""
    name = "<stdin>" if path == "-" else path
    return BoundedLines(open_bytes(path, what), name, what)


# A line longer than this is cut while it is read (the rest skipped, counted): printk's own
# limit is 1 KiB, and one 1 GiB line must not cost 1 GiB.
MAX_LINE_BYTES = 64 * 1024
# A JSON line may be longer, still bounded: an OpenTelemetry Collector's file export writes one
# request a line, hundreds of records (372 KB lines seen; its batches reach a few MB).
MAX_JSON_LINE_BYTES = 8 << 20
# No line break in this many bytes at the start: not a log (/dev/zero, a gzip of zeros).
NO_LINE_BREAK_BYTES = 1 << 20
# The first byte of a line that is not an empty one.
_NOT_BLANK = re.compile(rb"[^\r\n]")


_LF_BLOCK = b"\n" * 4096
_CRLF_BLOCK = b"\r\n" * 2048


def _blank_end(data: bytes, position: int) -> int | None:
    """The first byte from `position` that is neither CR nor LF, if there is one. Whole blocks of
    newlines are passed by comparing them (memcmp): the regex alone took 2.4 s on 200 MB."""
    for block in (_LF_BLOCK, _CRLF_BLOCK):
        while data.startswith(block, position):
            position += len(block)
    found = _NOT_BLANK.search(data, position)
    return found.start() if found else None


def line_bound(start: bytes) -> int:
    """How long the line that starts with these bytes may be."""
    return MAX_JSON_LINE_BYTES if start[:1] == b"{" else MAX_LINE_BYTES


def bound_note(cut_lines: int, cut_json: int, skipped_bytes: int) -> str | None:
    """What was cut, for a source's summary."""
    if not cut_lines:
        return None
    lines = "1 line" if cut_lines == 1 else f"{cut_lines:,} lines"
    bound = _size(MAX_LINE_BYTES)
    if cut_json:
        bound += f" ({_size(MAX_JSON_LINE_BYTES)} for a JSON line: {cut_json:,} such, their records lost)"
    return f"{lines} longer than {bound} cut to it while reading ({skipped_bytes:,} bytes skipped)"


def _size(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


class BoundedLines:
    """A log's lines as they are read, each at most MAX_LINE_BYTES (MAX_JSON_LINE_BYTES for a
    JSON line): memory stays bounded whatever the input. Only \n ends a line (a log with no LF in
    its first MiB has its CRs made LFs: sniff.CrEnded); a lone \r inside a name stays in it."""

    def __init__(self, raw: ByteStream, name: str, what: str = "kernel log") -> None:
        self.buffer = raw
        self.name = name
        self.what = what
        self.cut_lines = 0
        self.cut_json = 0
        self.skipped_bytes = 0
        self.consumed = 0
        """Bytes read so far, the skipped ones too."""
        self._data = b""
        self._next = 0
        self._ahead = b""  # a piece at_end read

    @property
    def rest(self) -> bytes:
        """What was read past the last line yielded, for a reader that takes over
        (sources/bigfile.py). Cut only when asked: a copy of it at every line cost a copy of
        the read piece a line (60 MB of newlines took minutes)."""
        return self._data[self._next :] + self._ahead

    def at_end(self) -> bool:
        """Was the last line yielded the last of the log? (Asked after a run of empty lines.)"""
        if self._next < len(self._data) or self._ahead:
            return False
        self._ahead = self.buffer.read1(READ_BYTES)
        self.consumed += len(self._ahead)
        return not self._ahead

    def position(self) -> int:
        """Bytes read so far of the file itself (compressed: of the compressed file)."""
        return self.buffer.position() if isinstance(self.buffer, LogBytes) else self.consumed

    def __enter__(self) -> BoundedLines:
        return self

    def __exit__(self, *_: object) -> None:
        self.buffer.close()

    def __iter__(self) -> Iterator[str]:
        for line in self.byte_lines():
            yield line.decode("utf-8", "replace")

    def byte_lines(self) -> Iterator[bytes]:
        """Each line with its newline (the last may lack one). After a line is yielded, `rest`
        holds the bytes read past it."""
        for line, _ in self.line_runs(collapse=False):
            yield line

    def line_runs(self, collapse: bool = True) -> Iterator[tuple[bytes, int]]:
        """Each line with its newline, and how many times it comes: a run of empty lines is
        yielded once, with its length (with `collapse`). Read in READ_BYTES pieces, as the
        big-file scan reads a stream: a damaged compressed file then yields the same lines on
        both paths, all those before the damage."""
        pending = b""  # the start of a line whose end is not read yet
        skipping = False  # inside an overlong line, after the part kept of it
        any_line = False
        blank, blanks = b"", 0  # a run of empty lines that reached the end of a piece
        while piece := self._read():
            if skipping:
                newline = piece.find(b"\n")
                self.skipped_bytes += len(piece) if newline < 0 else newline
                if newline < 0:
                    self._check_is_a_log(any_line)
                    continue
                piece, skipping = piece[newline:], False  # its newline ends the kept part
            data = pending + piece if pending else piece
            self._data = data
            start = 0
            while (newline := data.find(b"\n", start)) >= 0:
                any_line = True
                if collapse and newline - start <= 1 and (newline == start or data[start] == 13):
                    found = _blank_end(data, newline)
                    end = data.rfind(b"\n", start, len(data) if found is None else found) + 1
                    blank = blank or data[start : newline + 1]
                    blanks += data.count(b"\n", start, end)
                    start = self._next = end
                    if found is not None:
                        yield blank, blanks
                        blank, blanks = b"", 0
                    continue  # else the run may go on in the next piece
                self._next = newline + 1
                if blanks:
                    self._next = start
                    yield blank, blanks
                    blank, blanks = b"", 0
                    self._next = newline + 1
                yield data[start : newline + 1], 1
                start = newline + 1
            pending = data[start:]
            self._data = b""
            if len(pending) > MAX_LINE_BYTES and len(pending) > line_bound(pending):
                self.skipped_bytes += len(pending) - line_bound(pending)
                self.cut_json += line_bound(pending) > MAX_LINE_BYTES
                pending, skipping = pending[: line_bound(pending)], True
                self.cut_lines += 1
                self._check_is_a_log(any_line)
        if blanks:
            yield blank, blanks
        if pending:
            yield pending, 1

    def _read(self) -> bytes:
        """The next piece: what `at_end` read ahead, if it did."""
        if self._ahead:
            piece, self._ahead = self._ahead, b""
            return piece
        piece = self.buffer.read1(READ_BYTES)
        self.consumed += len(piece)
        return piece

    def _check_is_a_log(self, any_line: bool) -> None:
        if not any_line and self.consumed >= NO_LINE_BREAK_BYTES:
            raise InputError(
                f"{self.name} has no line break in its first {NO_LINE_BREAK_BYTES >> 20} MiB: "
                f"not a text {self.what}",
                hint=not_a_log_hint(self.what),
            )

    def note(self) -> str | None:
        """What was cut, for the source's summary."""
        return bound_note(self.cut_lines, self.cut_json, self.skipped_bytes)
