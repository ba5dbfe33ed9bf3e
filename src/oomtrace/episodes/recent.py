"""The last records fed: the lines a record is made whole from (a container status's name and
end around its reason, a unit status's heading above its `Active:` line)."""

from __future__ import annotations

from collections import deque

from oomtrace.records import Record


class RecentLines:
    """The last `size` records fed, in order."""

    def __init__(self, size: int) -> None:
        self._recent: deque[Record] = deque(maxlen=size)

    def saw(self, record: Record) -> None:
        self._recent.append(record)

    def before(self, record: Record, count: int) -> list[str]:
        """The messages of the `count` lines (at most) right before `record` in its source, as
        far back as they were all fed (a prefiltered source skips lines: none past a gap)."""
        lines: list[str] = []
        want = record.line_no - 1
        for before in reversed(self._recent):
            if before is record or before.line_no > want:
                continue
            if before.source != record.source or before.line_no != want or len(lines) >= count:
                break
            lines.append(before.message)
            want -= 1
        lines.reverse()
        return lines

    def between(self, first: Record, last: Record) -> list[str]:
        """The messages of the records fed between two of one source (a prefiltered source
        feeds only some of the lines)."""
        return [
            r.message
            for r in self._recent
            if r.source == first.source and first.line_no < r.line_no < last.line_no
        ]
