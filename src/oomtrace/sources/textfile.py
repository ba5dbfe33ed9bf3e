"""A saved kernel log: dmesg output, journalctl text or JSON, kern.log; plain or compressed.

KernelLogFile chooses the reading path once: line by line (linebyline.py) or, for a big file or
standard input when Hyperscan, numpy and stringzilla are installed, the chunk scan (bigfile.py).
Each path only reads; neither imports this module. The pieces both share (opening a log, its
bounded lines) live below them in logbytes.py and lines.py, re-exported here for older imports.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo

from oomtrace.errors import InputError, UsageError
from oomtrace.jsonshapes import Shape
from oomtrace.prefixes import LineSplitter
from oomtrace.records import Record
from oomtrace.sources.base import Source
from oomtrace.sources.compressed import compression_of
from oomtrace.sources.linebyline import line_by_line_records
from oomtrace.sources.lines import (
    MAX_JSON_LINE_BYTES,
    MAX_LINE_BYTES,
    NO_LINE_BREAK_BYTES,
    BoundedLines,
    bound_note,
    line_bound,
    open_text,
)
from oomtrace.sources.logbytes import READ_BYTES, LogBytes, open_bytes

__all__ = [
    "FAST_MIN_BYTES",
    "MAX_JSON_LINE_BYTES",
    "MAX_LINE_BYTES",
    "NO_LINE_BREAK_BYTES",
    "READ_BYTES",
    "BoundedLines",
    "KernelLogFile",
    "LogBytes",
    "bound_note",
    "line_bound",
    "open_bytes",
    "open_text",
]


class KernelLogFile(Source):
    """A file (or `-` for standard input) holding kernel log lines in any of the known shapes."""

    kind = "file"

    def __init__(
        self,
        path: str,
        zone: tzinfo,
        year: int | None = None,
        boot_time: datetime | None = None,
        json_shape: Shape | None = None,
    ) -> None:
        self.path = path
        self.json_shape = json_shape
        self.name = "<stdin>" if path == "-" else path
        self.zone = zone
        self.year = year
        self._boot_time = boot_time

    def boot_time(self) -> datetime | None:
        return self._boot_time

    lines_read: int | None = None
    """Lines in the file, when the fast path read only some of them (else each was a record)."""

    def records(self) -> Iterator[Record]:
        splitter = LineSplitter(
            self.name,
            zone=self.zone,
            reference=self._reference_time(),
            year=self.year,
            json_shape=self.json_shape,
        )
        # Standard input is streamed through the chunk scan as a decompressor is: a pipe cannot be
        # read at offsets, and read line by line a big one is a hundred times slower.
        if _scanner_importable() if self.path == "-" else _big_file(self.path):
            from oomtrace.sources.bigfile import big_file_records

            self.lines_read = yield from big_file_records(self, self.path, splitter)
        else:
            self.lines_read = yield from line_by_line_records(self, self.path, splitter)
        self._unknown_json(splitter)
        self._refuse_empty()

    def _refuse_empty(self) -> None:
        # Empty standard input is the command line's to refuse (exit 3: no evidence of "no kills").
        if not self.lines_read and self.path != "-":
            raise InputError(
                f"{self.name} is empty",
                hint="nothing was captured; for the boot that crashed try: journalctl -k -b -1 > kern.txt",
            )

    def _unknown_json(self, splitter: LineSplitter) -> None:
        if splitter.unknown_json:
            self.add_problem(
                f"{splitter.unknown_json:,} JSON line(s) of a shape not recognised were read as text, "
                "without their time or host: name their fields with --jsonl-fields "
                "message=PATH,time=PATH,host=PATH"
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


# Files at least this big are scanned in chunks first (OOMTRACE_FAST_MIN_BYTES overrides it): the
# size from which the chunk scan stops losing. Its start (numpy, Hyperscan, the threads) costs
# about 0.1 s; reading every line costs 0.11 to 0.18 s a MiB of noise with reports. `list -k`,
# seconds through the chunk scan / line by line, medians of 5 to 7 alternated pairs on 2 noisy
# cores (2026-12-02, bench/make_log.py):
#                                       128 KiB    512 KiB    1 MiB      2 MiB      4 MiB      16 MiB
#   journalctl -k, a report a 512 KiB   0.30/0.20  0.27/0.27  0.28/0.36  0.33/0.55  0.32/0.90  0.38/2.72
#   journalctl -k, a report a 44 KiB                          0.30/0.36  0.36/0.54  0.40/0.90
#   dmesg, Xid chatter, a report a 512K 0.31/0.19  0.31/0.24  0.26/0.29  0.31/0.41  0.33/0.63  0.37/1.77
#   crash loop (--kills), dmesg         0.31/0.18  0.31/0.22  0.36/0.27  0.51/0.36  0.75/0.71  1.86/1.76
#   crash loop (--kills), journalctl    0.30/0.20  0.38/0.25  0.42/0.35  0.63/0.55  0.99/0.95  3.01/3.16
# A crash loop's every line is a report's, read either way: it loses the start below about 4 MiB.
FAST_MIN_BYTES = 1024 * 1024


def _fast_min_bytes() -> int:
    given = os.environ.get("OOMTRACE_FAST_MIN_BYTES")
    if given is None:
        return FAST_MIN_BYTES
    try:
        return int(given)
    except ValueError:
        raise UsageError(
            f"OOMTRACE_FAST_MIN_BYTES={given!r} is not a number of bytes",
            hint="unset it, or give a whole number such as 1048576",
        ) from None


def _big_file(path: str) -> bool:
    """Is the file worth the chunk scan (big, with the scanning libraries installed)?"""
    if path == "-":
        return False
    minimum = _fast_min_bytes()
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return False  # a pipe (`-k <(journalctl -k)`): peeking at it would eat its first lines
        with open(path, "rb") as probe:
            head = probe.read(8)
    except OSError:
        return False
    if compression_of(head) is None:
        return info.st_size >= minimum and _scanner_importable()
    # Compressed: what counts is how much it holds, which its size does not tell (6 M short lines
    # make a 2.3 KB .zst that took 30 s line by line and takes a fraction of a second scanned):
    # decompress up to the threshold and see.
    return _decompresses_to(path, minimum) and _scanner_importable()


def _decompresses_to(path: str, minimum: int) -> bool:
    """Does the compressed file hold at least `minimum` bytes? A damaged one: as far as it goes."""
    held = 0
    try:
        with open_bytes(path) as log:
            while held < minimum:
                chunk = log.read1(READ_BYTES)
                if not chunk:
                    break
                held += len(chunk)
    except (OSError, InputError, EOFError, ValueError):
        pass  # the reading proper says what is wrong with it
    return held >= minimum


def _scanner_importable() -> bool:
    """Are hyperscan, numpy and stringzilla there? Imported only now: most logs are small, and
    numpy alone takes longer to import than reading a small log."""
    try:
        from oomtrace.sources import chunks  # noqa: F401
    except ImportError:  # no wheel for this platform: every line is read, same answers
        return False
    return True
