"""The watcher's story buffer: the records a live story is told from, bounded, never losing one not yet told.

It owns which records are kept (a warning repeated line after line folded into two, a report's
bulk counted past REPORT_RECORDS_MAX) and which are let go (the oldest past BUFFER_MAX, those an
hour older than the newest), always short of `start`, the first record of a story not yet told,
which the watcher passes in. Telling a story stays the watcher's: it tells the kills first when
room is needed (Watcher._make_room). No I/O.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from oomtrace import events as ev
from oomtrace.episodes import LOOKBACK_S
from oomtrace.frozen import Frozen, replace
from oomtrace.model import ProbeSample
from oomtrace.records import Record
from oomtrace.sources.base import Source

# The records kept to tell a story: a report, the warnings of the hour before it, and room.
# Only records of stories already told (or of none) leave it: a report not yet told stays whole,
# and its kills are told before the buffer would lose any of it.
BUFFER_MAX = 20_000
# One report not yet told (a header, a tasks table, no kill line yet) keeps this many records at
# most: a hostile or broken log can make a report of a million lines. Past it its body lines
# are counted, not kept; its kill line and summary always are.
REPORT_RECORDS_MAX = 200_000


class Hold(Frozen):
    """The position before the first record a story not yet told needs: the cursor may not pass it."""

    cursor: str | None
    since: float
    first: int
    """The buffer position (records appended before it) of the first record the story needs."""


class StoryBuffer:
    """The records kept, oldest first, and how many were ever appended (a record's position)."""

    def __init__(self) -> None:
        self.records: deque[Record] = deque()
        self.appended = 0
        """Records ever put in the buffer: the position of the next one."""
        self.body_dropped = 0
        """Report lines not kept because one report not yet told passed REPORT_RECORDS_MAX."""
        self._tail_key: tuple[str, str] | None = None
        self._tail_run = 0

    def keep(
        self, record: Record, event: ev.Event | None, start: int | None, *, essential: bool = True
    ) -> bool:
        """Into the buffer; whether it took a place of its own (the caller then makes room). A
        warning repeated line after line (a driver's Xid chatter, thousands a second) is kept as
        two records, its first and its latest with the ones between counted (`Record.repeats`),
        so that it cannot push the rest out of the buffer. A line of a report's bulk
        (`essential` False) is counted, not kept, once the story not yet told that begins at
        `start` holds REPORT_RECORDS_MAX records."""
        key = (event.kind, event.key) if isinstance(event, ev.EarlyWarning) else None
        if key is not None and key == self._tail_key and self._tail_run >= 2:
            last = self.records[-1]
            self.records[-1] = replace(record, repeats=last.repeats + 1)
            return False
        if not essential and start is not None and self.appended - start >= REPORT_RECORDS_MAX:
            self.body_dropped += 1
            return False
        self._tail_run = self._tail_run + 1 if key is not None and key == self._tail_key else 1
        self._tail_key = key
        self.records.append(record)
        self.appended += 1
        return True

    @property
    def oldest(self) -> int:
        """The position of the oldest record still kept."""
        return self.appended - len(self.records)

    def drop_oldest(self, start: int | None) -> None:
        """Drop the oldest records down to BUFFER_MAX, none from `start` on."""
        excess = len(self.records) - BUFFER_MAX
        if start is not None:
            excess = min(excess, start - self.oldest)
        for _ in range(max(0, excess)):
            self.records.popleft()

    def forget_old(self, start: int | None) -> None:
        """Records more than an hour older than the newest: no story reaches back that far."""
        newest = next((r.stamp.wall for r in reversed(self.records) if r.stamp.wall), None)
        if newest is None:
            return
        horizon = newest.timestamp() - LOOKBACK_S
        while (
            self.records and self.records[0].stamp.wall and self.records[0].stamp.wall.timestamp() < horizon
        ):
            if start is not None and self.oldest >= start:
                break  # a story not yet told needs it, however old
            self.records.popleft()

    def before(self, open_report: Hold | None) -> list[Record]:
        """The records a story is told from: all, but those of a report begun since the last
        kill line (`open_report`), which has no kill yet and is not this story's."""
        records = list(self.records)
        if open_report is not None:
            del records[max(0, open_report.first - self.oldest) :]
        return records


def is_body_line(event: ev.Event | None) -> bool:
    """A line of a report's bulk (a tasks row, a call frame, a Mem-Info line, or one of no
    event): what an over-long report lets go of first."""
    return event is None or isinstance(event, _BODY_LINES)


_BODY_LINES = (ev.TaskRow, ev.CallFrame, ev.Counters, ev.ZoneLine, ev.NodeLine, ev.MemcgStat)


class BufferSource(Source):
    """The buffer's records (and the probes' samples) as a source, for one analysis."""

    kind = "watch"

    def __init__(self, name: str, records: list[Record], samples: tuple[ProbeSample, ...]) -> None:
        self.name = name
        self._records = records
        self.samples = samples

    def records(self) -> Iterator[Record]:
        yield from self._records
