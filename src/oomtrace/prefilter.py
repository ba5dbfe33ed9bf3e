"""Which lines of a big log the full grammar must see: anchors, and the report bodies they open.

Every line that matters to an OOM story holds one of ANCHORS, or lies inside a report that an
anchor opened (Mem-Info counters, zone lines, tasks-table rows, call frames hold none). The same
rule serves Hyperscan over a big file's chunks (sources/chunks.py) and a line-by-line check over
the journal, so every reader keeps the same lines.
"""

from __future__ import annotations

import functools
import re
import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate
from typing import Any

from oomtrace.messages import MESSAGES
from oomtrace.messages.runtime import FINISHED_LINES, is_status

# Short literals that stand for many anchors at once: the fewer literals, the faster Hyperscan
# searches them (its cost follows their count). Each must be part of some kind's anchor.
COVERS = ("oom", "OOM", "Kill", "ill process", "emory", "failure", "SIGTERM", "SIGKILL")


def _literals() -> tuple[str, ...]:
    """The registry's anchors, each replaced by the cover literal it holds, without repeats."""
    literals: dict[str, None] = {}
    for kind in MESSAGES:
        if kind.in_report:
            continue
        for anchor in kind.anchors:
            cover = next((c for c in COVERS if c in anchor), anchor)
            literals[cover] = None
    return tuple(literals)


# Literals, not patterns: Hyperscan searches them all at once and Python's `in` finds each fast.
ANCHORS = _literals()
# The anchor a noisy driver can print hundreds of thousands of times: a big file's scan counts
# these lines in bulk (sources/chunks.py) instead of handing each to the grammar.
XID_ANCHOR = "NVRM: Xid ("
# Anchors that open a report whose other lines hold no anchor.
REGION_STARTS = tuple(a for kind in MESSAGES if kind.opens_report for a in kind.anchors)
# A report is read to its kill line, or this far when the kill line never comes (a cut report).
REGION_MAX_LINES = 20_000
# The lines after a line with an anchor (a kill line above all) read with it: its rest, where a
# paste wrapped it (a 190-character kill line is four pieces at 60 columns, a mail's soft breaks
# cut it again), and its pieces are never read apart (rejoin.py joins only adjacent lines).
REST_LINES = 3


# `[  1234]  1000  1234  ...`: a tasks-table row, whatever prefix stands before it.
_TASK_ROW = re.compile(r"\[ *\d+\] +\d+ +\d+")


class Prefilter:
    """Decides line by line, in input order, whether a line goes to the full grammar."""

    def __init__(self) -> None:
        self._left = 0

    @property
    def in_region(self) -> bool:
        return self._left > 0

    def keep(self, lines: int) -> None:
        """Want at least the next `lines` lines (a container status's look-back and its end)."""
        self._left = max(self._left, lines)

    def wants(self, text: str) -> bool:
        if self._left:
            self._left -= 1
            if "Killed process" in text:
                self._left = REST_LINES  # the report ends at its kill (and its wrapped rest)
            elif "invoked oom-killer" in text:
                self._left = REGION_MAX_LINES  # a new report begins inside this one
            elif not self._left and self._anchored(text):
                self._left = REST_LINES
            elif self._left < REGION_MAX_LINES // 2 and _TASK_ROW.search(text):
                # A tasks table of a big machine can outrun the region: it goes on while rows do.
                self._left = REGION_MAX_LINES
            return True
        if not holds_anchor(text):
            return False
        if "Killed process" not in text and any(start in text for start in REGION_STARTS):
            self._left = REGION_MAX_LINES
        elif XID_ANCHOR not in text:
            # A wrapped line's rest holds no anchor of its own (rejoin.parse_records); a container
            # status's lines down to its `Finished:` are what the builder checks between them.
            self._left = FINISHED_LINES if is_status(text) else REST_LINES
        return True

    def take_to_kill(self, data: bytes, start: int) -> int:
        """Inside a report, the lines of `data` (whole lines) from `start` (a line start) to the
        report's kill line, taken at once: where that line ends (its newline, or the end of
        `data`), the state left as `wants` of each would leave it. `start` (nothing taken) when
        no kill line is in `data`, or the report's line budget would run out before it, or the
        budget is the few lines after a line with an anchor or a kill (not worth a search).

        Every line before the kill line is wanted: a line only lowers the budget by one, or
        raises it; and the kill line leaves REST_LINES to come (its wrapped rest), whatever
        came before it. Bytes and the decoded text hold "Killed process" alike (an ASCII byte is
        never part of a character, nor of what a bad byte is replaced with)."""
        if self._left <= REST_LINES:
            return start
        kill = data.find(b"Killed process", start)
        if kill < 0 or data.count(b"\n", start, kill) >= self._left:
            return start
        self._left = REST_LINES
        end = data.find(b"\n", kill)
        return len(data) if end < 0 else end

    def candidates(self, parts: Sequence[bytes]) -> Iterator[int]:
        """The positions of the parts (kmsg records, JSON lines) `wants` must be asked about, in
        order: those holding an anchor (one scan of them all), and every part while a report is
        open. The others it would refuse without a change of state. A generator, to be asked in
        step: each `wants` on a part it yields may open or close a report."""
        after = 0  # the first position not yet yielded
        for index in sorted(anchored(parts)) if parts else ():
            while self._left and after < index:
                after += 1
                yield after - 1
            if index >= after:
                after = index + 1
                yield index
        while self._left and after < len(parts):
            after += 1
            yield after - 1

    @staticmethod
    def _anchored(text: str) -> bool:
        return XID_ANCHOR not in text and holds_anchor(text)


def holds_anchor(text: str) -> bool:
    """Does `text` hold any of ANCHORS?"""
    # A plain loop, not any() over a generator: a third faster, and the journal readers call
    # this once an entry (a million times for a big journal).
    for anchor in ANCHORS:  # noqa: SIM110 (measured: the loop is the faster)
        if anchor in text:
            return True
    return False


def anchored(parts: Sequence[bytes]) -> set[int]:
    """The positions of the parts (kmsg records, journalctl's JSON lines) that hold an anchor:
    one Hyperscan scan of them all, joined, when it is installed (a twentieth of a microsecond
    a part, against 2.5 for the loop of `in` tests). Parts ending in a newline (kmsg records
    do) share no anchor across a seam, as no anchor holds one; other parts may, which makes
    one more part to ask about, never one missed."""
    database = _joined_database()
    if database is None:
        return {index for index, part in enumerate(parts) if _holds_anchor_bytes(part)}
    ends: list[int] = []
    database.scan(b"".join(parts), match_event_handler=_matched, context=ends, scratch=_scratch())
    if not ends:
        return set()
    bounds = list(accumulate(map(len, parts)))
    return {bisect_right(bounds, end - 1) for end in ends}


def _holds_anchor_bytes(part: bytes) -> bool:
    for anchor in _ANCHOR_BYTES:  # noqa: SIM110 (as holds_anchor: the loop is the faster)
        if anchor in part:
            return True
    return False


# The anchors are ASCII: in kmsg's escaped text and in UTF-8 JSON they are the same bytes.
_ANCHOR_BYTES = tuple(anchor.encode() for anchor in ANCHORS)


def _matched(_id: int, _start: int, end: int, _flags: int, ends: list[int]) -> None:
    ends.append(end)


def literal_database(
    literals: Sequence[str], ids: Sequence[int] | None = None, once: Sequence[bool] | None = None
) -> Any:
    """The literals as one Hyperscan block-mode database, each reported with its id (its
    position unless `ids` says), once a scan where `once` says so and at every match elsewhere;
    None without Hyperscan (no wheel for this platform: the callers' loops of `in` tests, the
    same answers). Imported only now: the import is not free, and short runs never scan."""
    try:
        import hyperscan
    except ImportError:
        return None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[re.escape(literal).encode() for literal in literals],
        ids=list(ids if ids is not None else range(len(literals))),
        elements=len(literals),
        flags=[hyperscan.HS_FLAG_SINGLEMATCH if single else 0 for single in once or [False] * len(literals)],
    )
    return database


@functools.cache
def _joined_database() -> Any:
    """ANCHORS, each reported at every match (a joined scan needs each part's, not one a scan)."""
    return literal_database(ANCHORS)


def _scratch() -> Any:
    """This thread's Hyperscan scratch space (one is one scan's at a time)."""
    scratch = getattr(_threads, "scratch", None)
    if scratch is None:
        import hyperscan

        scratch = _threads.scratch = hyperscan.Scratch(_joined_database())
    return scratch


_threads = threading.local()
