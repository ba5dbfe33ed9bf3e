"""Reading a big log file through the chunk scan: only the lines that matter reach the grammar.

The head of the file is read in full (it settles the format and the first stamp); then, chunk
by chunk (sources/chunks.py), the lines holding an anchor, the reports they open, the lines
around a container status or a unit status (messages/registry.read_around), and the NVRM
Xid lines, whose repeats are counted rather than parsed when counting cannot change the answer.
A report cut before its header takes its body from the lines before its first line the scan
handles (a kill, a call frame, Mem-Info...): there the lines the scan skipped are read back, from
the last one handled, and from further back while the stretch skipped before a line of no report
(an NVRM failure printed inside the body) ends in a report line. So outside a report the records
of the lines handled are held back until the next anchor line says which it is.
`tests/test_fastpath.py` checks that the answers equal those of reading every line.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

from oomtrace.episodes import REPEAT_GAP_S, REPORT_LINE_EVENTS, record_gap
from oomtrace.events import EarlyWarning, Event, OomInvoked
from oomtrace.frozen import Frozen, replace
from oomtrace.messages import read_around
from oomtrace.parse import parse_record
from oomtrace.prefilter import REGION_MAX_LINES, XID_ANCHOR, Prefilter
from oomtrace.prefixes import LineSplitter
from oomtrace.records import Record
from oomtrace.rejoin import parse_records
from oomtrace.sources import chunks
from oomtrace.sources.base import DAMAGED, Source
from oomtrace.sources.compressed import cut_short
from oomtrace.sources.lines import BoundedLines, bound_note
from oomtrace.sources.logbytes import open_bytes

# Lines always read in full at the start: the format, the first stamp (a run of empty lines
# counts as one).
HEAD_LINES = 100
# A read-back reaches this many lines back at most (as many as a report is read after its
# header), and into the chunk before the report line's, no further. The records held back are
# handed on at a header (the builder drops the body lines before it), at the end of the chunk
# after the one they began in, and when they span more lines than this or hold more records;
# what a cut report's body loses so, tests/test_fastpath.py shows.
READ_BACK_LINES = REGION_MAX_LINES
# Lines of no message looked past at the end of a gap for the line that says whether a cut
# report's body goes on there (a blank line, a `Tainted: [P]=...` line).
_LOOKED_PAST = 5
_XID = XID_ANCHOR.encode()


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").rstrip("\r\n")


def big_file_records(source: Source, path: str, splitter: LineSplitter) -> Generator[Record, None, int]:
    """The head in full, then chunk by chunk only anchor lines, the reports they open, and Xids;
    returns how many lines the log held. A file is read at offsets; standard input, a
    decompressor's or a transcoder's bytes stream. Progress, and where reading stopped early,
    are told to `source`."""
    prefilter = Prefilter()
    line_no = 0
    offset = read_to = 0
    total = 0
    cut_lines = cut_json = skipped = 0  # overlong lines the chunk scan cut, and the bytes it skipped
    reader = _ChunkReader(splitter, prefilter)
    last: chunks.Chunk | None = None
    with open_bytes(path) as stream:
        streamed = path == "-" or stream.transformed
        head = BoundedLines(stream, source.name)
        try:
            for read, (raw, count) in enumerate(head.line_runs(), start=1):
                line_no += count
                text = _decode(raw)
                prefilter.wants(text)
                # A run of empty lines is one record, and a last one (as linebyline reads them).
                yield from splitter.split(text, line_no - count + 1)
                if count > 1 and head.at_end():
                    yield from splitter.split("", line_no)
                if read >= HEAD_LINES and not prefilter.in_region:
                    break
            total = line_no
            # The chunk scan takes over where the head's last line ended.
            offset = read_to = head.consumed - len(head.rest)
            if streamed:
                pieces = chunks.stream_chunks(stream, offset, line_no + 1, head.rest)
            else:
                pieces = chunks.chunks(path, offset, line_no + 1)
            for chunk in pieces:
                cut_lines += chunk.cut_lines
                cut_json += chunk.cut_json
                skipped += chunk.skipped_bytes
                source._report(stream.position() if streamed else chunk.offset)
                yield from reader.read(chunk)
                total = chunk.first_line - 1 + chunk.line_count
                last = chunk
                read_to = max(read_to, chunk.offset + len(chunk.data) + chunk.skipped_bytes)
        except DAMAGED as error:
            # Damage before the head's first line refuses the file, as line by line does.
            source.problem = cut_short(source.name, error, max(total, line_no) if line_no else 0)
        yield from reader.finish()
        # Read at offsets, the scan ends where the file ends now: short of its first size, it shrank.
        source.add_problem(stream.shrank(source.name, None if streamed else read_to, max(total, line_no)))
    source.add_problem(
        bound_note(head.cut_lines + cut_lines, head.cut_json + cut_json, head.skipped_bytes + skipped)
    )
    if last is not None and total > reader.last_line:
        # The last line too, so the span the report states is the file's whole span.
        yield from splitter.split(_decode(_last_line(last.data)), total)
    return max(total, line_no)


def _last_line(data: bytes) -> bytes:
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    return data[data.rfind(b"\n", 0, end) + 1 : end]


class _Gap(Frozen):
    """Lines the scan skipped (of one chunk), where a cut report's body may lie."""

    chunk: chunks.Chunk
    start: int
    end: int
    line_no: int
    """The number of the line at `start`."""
    saved: tuple[object, ...]
    """The splitter's state at `start`."""
    held_before: int
    """How many records were held back before it."""


class _Window:
    """The lines since the last one handed on: the gaps the scan skipped, and the records of the
    lines it handled between them, held back in order. A report line no header opened has the
    gaps holding its body read back with the lines between them instead; anything else hands
    the held records on."""

    __slots__ = ("gaps", "held")

    def __init__(self) -> None:
        self.gaps: list[_Gap] = []
        self.held: list[Record] = []


class _ChunkReader:
    """Hands the lines of each chunk that matter to the splitter, in file order. Over 250 lines
    because holding records back, reading a cut report's body back and counting Xid repeats
    share one window, the splitter's checkpoints and the line numbers known so far, per anchor
    line: split into classes they would pass that state back and forth on the hot path."""

    def __init__(self, splitter: LineSplitter, prefilter: Prefilter) -> None:
        self.splitter = splitter
        self.prefilter = prefilter
        self.last_line = 0
        self._known = (0, 1)
        self._window: _Window | None = None

    def read(self, chunk: chunks.Chunk) -> Iterator[Record]:
        position = 0  # lines before this offset are dealt with (held back, maybe)
        self._known = (0, chunk.first_line)
        if self.prefilter.in_region:  # a report, or the rest of a line held back, goes on here
            position = yield from self._held(chunk, self._region(chunk, 0))
        for start in chunk.anchor_lines:
            if start < position:
                continue  # inside a report read above
            raw, end = chunk.line_at(start)
            text = _decode(raw)
            if position < start and (around := read_around(text)) is not None:
                # A container status's reason or end, a unit status's `Active:`: the lines above
                # it (a name, an end) and below it (a Finished line) are read as a full read
                # gives them, from where its look-back begins (messages/registry.read_around).
                above, below = around
                status, start = start, _lines_back(chunk.data, position, start, 0, above)[0]
                raw, end = chunk.line_at(start)
                text = _decode(raw)
                self.prefilter.keep(chunk.data.count(b"\n", start, status) + below)
                position = yield from self._anchor(chunk, position, start, end, text)
            elif self.prefilter.wants(text):
                position = yield from self._anchor(chunk, position, start, end, text)
        window = self._window
        if window is not None and window.gaps and window.gaps[0].chunk is not chunk:
            yield from self.finish()  # no read-back reaches further than the chunk before
        if position < len(chunk.data):
            window = self._hold_gap(chunk, position, len(chunk.data))
            if len(window.held) > READ_BACK_LINES:
                yield from self.finish()

    def finish(self) -> Iterator[Record]:
        """The records held back, when no report line came after them."""
        window, self._window = self._window, None
        if window is not None:
            yield from window.held

    def _hold_gap(self, chunk: chunks.Chunk, start: int, end: int, end_line: int | None = None) -> _Window:
        """Holds back the records of the Xid lines in [start, end), and where that gap is
        (`end_line`: the number of the line at `end`, when known)."""
        window = self._window = self._window or _Window()
        if start < end:
            line_no = self._line_no(chunk, start)
            gap = _Gap(chunk, start, end, line_no, self.splitter.checkpoint(), len(window.held))
            window.gaps.append(gap)
            window.held.extend(self._xids(chunk, start, end, end_line))
        return window

    def _anchor(
        self, chunk: chunks.Chunk, position: int, start: int, end: int, text: str
    ) -> Generator[Record, None, int]:
        """The anchor line at `start` (its line ends at `end`) and what it opens, after the lines
        since the last one handled (from `position`): the gaps holding a cut report's body read
        back when the anchor line is a report's (such a report takes its body from the lines
        before it); else its records held back after those of the Xid lines before it, until it
        is known whether a report line follows. Returns where it ends."""
        line_no = chunk.line_no(start, self._known)
        if position == start and self._window is None:  # nothing skipped, nothing held
            self._known = (start, line_no)
            yield from self._split(text, line_no)
            return (yield from self._region(chunk, end))
        # The anchor line is read first to know what it is, then again after the lines before it
        # (the splitter learns from each line, in file order).
        saved = self.splitter.checkpoint()
        records = self.splitter.split(text, line_no)
        events = [parse_record(record) for record in records]
        report_line = self._is_report_line(records, events, chunk, start)
        header = any(isinstance(event, OomInvoked) for event in events)
        self.splitter.rollback(saved)
        if report_line:
            yield from self._read_back(chunk, position, start, line_no, saved)
        else:
            window = self._window
            if header or (window is not None and line_no - window.gaps[0].line_no > READ_BACK_LINES):
                # A header: the builder drops the body lines before it. Or too far to read back.
                yield from self.finish()
            if not header and (self._window is not None or position < start):
                window = self._hold_gap(chunk, position, start, line_no)
                self._known = (start, line_no)
                window.held.extend(self._split(text, line_no))
                return (yield from self._held(chunk, self._region(chunk, end)))
            yield from self._xids(chunk, position, start, line_no)
        self._known = (start, line_no)
        yield from self._split(text, line_no)
        return (yield from self._region(chunk, end))

    def _held(
        self, chunk: chunks.Chunk, records: Generator[Record, None, int]
    ) -> Generator[Record, None, int]:
        """Holds the records of a region (of `chunk`) back in the window, until they are more than
        a read-back could replace (a run of a million anchored lines): then hands them and the
        rest on. A report line among them (a tasks row after an NVRM line opens a region that
        reads on to the kill) has the gaps before read back with them, as at an anchor line;
        a header before any report line hands them on instead (the builder drops the body lines
        before a header: reading them back changed nothing, and was a tenth of `list` on a crash
        loop whose reports follow NVRM lines)."""
        report_line = False
        while self._window is not None:
            try:
                record = next(records)
            except StopIteration as stop:
                position = int(stop.value)
                break
            self._window.held.append(record)
            event = parse_record(record)
            if not report_line and isinstance(event, OomInvoked):
                yield from self.finish()
                continue
            report_line = report_line or isinstance(event, REPORT_LINE_EVENTS)
            if len(self._window.held) > READ_BACK_LINES:
                yield from self.finish()
        else:  # nothing held (any more): the rest goes straight on
            return int((yield from records))
        if report_line and self._window is not None:
            line_no = chunk.line_no(position, self._known)
            yield from self._read_back(chunk, position, position, line_no, self.splitter.checkpoint())
            self._known = (position, line_no)
        return position

    def _read_back(
        self, chunk: chunks.Chunk, position: int, start: int, line_no: int, saved: tuple[object, ...]
    ) -> Iterator[Record]:
        """The lines before the report line at `start` (numbered `line_no`; `saved` the
        splitter's state before it) read back in full, instead of the records held since, from
        the gap before it or further back (_body_start); the records held before are handed on.
        When even that gap is longer than READ_BACK_LINES, only its last READ_BACK_LINES lines
        are, and the Xid lines before those are handled as the scan handles them."""
        window, self._window = self._window, None
        held, gaps = (window.held, window.gaps) if window is not None else ([], [])
        number = line_no - chunk.data.count(b"\n", position, start)  # the line at `position`
        gaps = [*gaps, _Gap(chunk, position, start, number, saved, len(held))]
        first = self._body_start(gaps, line_no)
        if first is None:  # the last gap alone is longer than a read-back
            self.splitter.rollback(saved)
            yield from held
            low, number = _lines_back(chunk.data, position, start, line_no, READ_BACK_LINES)
            self._known = (position, number - chunk.data.count(b"\n", position, low))
            yield from self._xids(chunk, position, low)
            yield from self._block(chunk, low, start, number)
            return
        yield from held[: first.held_before]
        self.splitter.rollback(first.saved)
        low, number = first.start, first.line_no
        if first.chunk is not chunk:
            yield from self._block(first.chunk, low, len(first.chunk.data), number)
            low, number = 0, chunk.first_line
        yield from self._block(chunk, low, start, number)

    def _body_start(self, gaps: list[_Gap], line_no: int) -> _Gap | None:
        """The first gap to read back from: the last one, and those before it as long as each
        ends in a report line (a cut body going on behind a line of no report that the scan
        handled), within READ_BACK_LINES lines of `line_no`; None when the last gap alone is
        further."""
        first = gaps[-1]
        if line_no - first.line_no > READ_BACK_LINES:
            return None
        for gap in reversed(gaps[:-1]):
            if line_no - gap.line_no > READ_BACK_LINES or not self._ends_in_report_line(gap):
                break
            first = gap
        return first

    def _ends_in_report_line(self, gap: _Gap) -> bool:
        """Is the last line of the gap that says something (not an Xid line, not one of no
        message, of which a few are looked past) a report's? The caller rolls the splitter back."""
        data = gap.chunk.data
        end = gap.end - 1  # the newline ending the gap's last line
        unread = _LOOKED_PAST
        while end > gap.start and unread:
            start = max(gap.start, data.rfind(b"\n", gap.start, end) + 1)
            line = data[start:end]
            end = start - 1
            if _XID in line:
                continue
            self.splitter.rollback(gap.saved)
            events = [parse_record(r) for r in self.splitter.split(_decode(line), gap.line_no)]
            if any(event is not None for event in events):
                return any(isinstance(event, REPORT_LINE_EVENTS) for event in events)
            unread -= 1
        return False

    def _is_report_line(
        self, records: list[Record], events: list[Event | None], chunk: chunks.Chunk, start: int
    ) -> bool:
        """Is the anchor line (`records`, parsed as `events`) a line of a report, alone or, cut,
        with its rest (the line after it, which the prefilter reads too)? The caller rolls the
        splitter back."""
        if any(isinstance(event, REPORT_LINE_EVENTS) for event in events):
            return True
        _, after = chunk.line_at(start)
        if not events or events[-1] is not None or not self.prefilter.in_region or after >= len(chunk.data):
            return False
        rest = self.splitter.split(_decode(chunk.line_at(after)[0]), records[-1].line_no + 1)
        _, joined = next(parse_records([records[-1], *rest]))
        return isinstance(joined, REPORT_LINE_EVENTS)

    def _block(self, chunk: chunks.Chunk, low: int, high: int, line_no: int) -> list[Record]:
        """The lines of chunk.data[low:high] (from a line start to a line start, a line's end or
        the end) at once: one decode and one call for them all. UTF-8 decodes alike whole or a
        line at a time: no bad byte takes a newline with it."""
        if low >= high:
            return []
        data = chunk.data
        end = high - 1 if data[high - 1] == ord("\n") else high
        self.last_line = max(self.last_line, line_no + data.count(b"\n", low, end))
        return self.splitter.split_block(data[low:end].decode("utf-8", "replace"), line_no)

    def _line_no(self, chunk: chunks.Chunk, start: int) -> int:
        """Line number of the line starting at `start`, counted from the last line numbered
        (the lines are visited in order, so each newline of the chunk is counted about once;
        counting from the chunk's start each time was a third of the time on a log of
        thousands of reports)."""
        line_no = chunk.line_no(start, self._known)
        self._known = (start, line_no)
        return line_no

    def _region(self, chunk: chunks.Chunk, position: int) -> Generator[Record, None, int]:
        """The lines of a report, from `position` to its kill line or the chunk's end."""
        line_no = self._line_no(chunk, position)
        data = chunk.data
        while position < len(data) and self.prefilter.in_region:
            end = self.prefilter.take_to_kill(data, position)
            if end > position:
                # The lines up to the kill line at once (line by line, reading and splitting them
                # was a third of `list` on a crash loop).
                yield from self._block(chunk, position, end, line_no)
                line_no += data.count(b"\n", position, end) + 1
                position = min(end + 1, len(data))
                continue
            raw, position = chunk.line_at(position)
            text = _decode(raw)
            self.prefilter.wants(text)
            yield from self._split(text, line_no)
            line_no += 1
        self._known = (position, line_no)
        return position

    def _split(self, text: str, line_no: int) -> list[Record]:
        self.last_line = max(self.last_line, line_no)
        return self.splitter.split(text, line_no)

    def _xids(
        self, chunk: chunks.Chunk, low: int, high: int, high_line: int | None = None
    ) -> Iterator[Record]:
        """The Xid lines that start in [low, high) (both line starts): counted, or read.
        `high_line`, the number of the line at `high` when known, saves counting a stretch's
        newlines twice (from its start for the last Xid line, and for the line at `high`)."""
        offsets, groups = chunk.xids_between(low, high)
        if groups:
            counted = self._count(chunk, groups, (high, high_line) if high_line is not None else None)
            if counted is not None:
                yield from counted
                return
        previous = -1
        for offset in offsets.tolist():
            start = chunk.line_start(offset)
            if start == previous:
                continue  # a second Xid on the same line
            previous = start
            text = _decode(chunk.line_at(start)[0])
            if self.prefilter.wants(text):
                yield from self._split(text, self._line_no(chunk, start))

    def _count(
        self, chunk: chunks.Chunk, groups: list[Any], after: tuple[int, int] | None
    ) -> list[Record] | None:
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
        saved = self.splitter.checkpoint()
        records: dict[int, Record] = {}
        known = self._known
        for start, _ in picks:
            known = (start, chunk.line_no(start, known, after))
            split = self.splitter.split(_decode(chunk.line_at(start)[0]), known[1])
            if len(split) != 1:
                break
            records[start] = split[0]
        else:
            if all(_same_run(chunk, group, records) for group in groups):
                self._known = known
                self.last_line = max(self.last_line, *(record.line_no for record in records.values()))
                return [
                    replace(records[start], repeats=repeats) if repeats else records[start]
                    for start, repeats in picks
                ]
        self.splitter.rollback(saved)
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
    gap = record_gap(first, last)  # the builder's own rule for joining a run
    if gap is None:
        # Incomparable stamps join a run line by line too, but only lines with no time at all
        # are sure to be incomparable all the way between.
        a, b = first.stamp, last.stamp
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


def _lines_back(data: bytes, low: int, high: int, high_line: int, limit: int) -> tuple[int, int]:
    """Where the last `limit` lines of data[low:high] begin (`low` if it holds no more), and that
    line's number: `low` and `high` are line starts (or `high` the end), `high_line` the number
    of the line at `high`."""
    lines = data.count(b"\n", low, high)
    if lines <= limit:
        return low, high_line - lines
    at = high
    for _ in range(limit):
        at = data.rfind(b"\n", low, at - 1) + 1
    return at, high_line - limit
