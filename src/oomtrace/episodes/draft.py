"""A kernel report while it is read (Draft), within the bounds one report may hold, and its events by kind.

The assembler decides which lines a draft takes; a draft only keeps them (bounded), and
ReportEvents is how the freezer's rules read a closed one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from oomtrace import events as ev
from oomtrace.badness import rss_pages, score_row
from oomtrace.parse import columns_by_count, split_task_row
from oomtrace.records import Stamp

# What one report may hold in memory, however long it is (a hostile or broken log can make one
# report of a million lines): quoted lines, tasks-table rows, and every other report line.
MAX_RAW_LINES = 300
MAX_TASK_ROWS = 500
"""Past this many rows a table keeps the tasks the kernel would rank highest (by its badness,
estimated as the rows arrive) and the largest by rss; the victim is the top of the first."""
MAX_REPORT_EVENTS = 20_000


@dataclass
class Draft:
    """An episode while its report is still being read."""

    seq: int
    source: str
    host: str | None
    first_stamp: Stamp
    last_stamp: Stamp
    first_line: int
    last_line: int
    header: ev.OomInvoked | None = None
    events: list[ev.Event] = field(default_factory=list)
    kill: ev.Killed | None = None
    kill_seq: int = 0
    chosen: ev.KillChosen | None = None
    reap: tuple[ev.Reaped, int] | None = None
    suppressed: int = 0
    raw_lines: list[str] = field(default_factory=list)
    task_rows: int = 0
    """Rows the tasks table had (it may keep fewer: MAX_TASK_ROWS)."""
    kept_rows: int = 0
    dropped_events: int = 0
    """Report lines past MAX_REPORT_EVENTS, counted and not kept."""
    raw_cut: int = 0
    """Report lines past MAX_RAW_LINES, not kept for quoting."""

    def add(self, event: ev.Event, seq: int) -> None:
        record = event.record
        self.last_stamp = record.stamp
        # A line a terminal wrapped and rejoin.py joined back ends on the line of its last part.
        self.last_line = record.line_no + record.raw.count("\n")
        if isinstance(event, ev.TaskRow):
            self.task_rows += 1
            self.kept_rows += 1
            if self.kept_rows > 2 * MAX_TASK_ROWS:
                self._prune_rows()
        elif len(self.events) - self.kept_rows >= MAX_REPORT_EVENTS and not isinstance(
            event, (ev.Killed, ev.OomKillSummary, ev.TaskInMemcg, ev.OomInvoked)
        ):
            self.dropped_events += 1
            return
        self.events.append(event)
        if not self.raw_lines or self.raw_lines[-1] is not record.raw:
            if len(self.raw_lines) < MAX_RAW_LINES:
                self.raw_lines.append(record.raw)
            else:
                self.raw_cut += 1

    def _prune_rows(self) -> None:
        """Keep the MAX_TASK_ROWS rows the kernel would rank highest and the largest by rss."""
        header = next((e for e in self.events if isinstance(e, ev.TasksHeader)), None)
        columns = table_columns(header, (e for e in self.events if isinstance(e, ev.TaskRow)))
        limit = next((e.limit_kb for e in self.events if isinstance(e, ev.MemcgUsage)), None)
        ram = next((e.count for e in self.events if isinstance(e, ev.PagesLine) and e.kind == "ram"), None)
        # The adj term's base: the cgroup's limit in a memcg OOM, else RAM (4 KiB pages assumed).
        total = limit // 4 if limit is not None and limit < 1 << 50 else ram
        scored = []
        for index, event in enumerate(self.events):
            if isinstance(event, ev.TaskRow):
                row: dict[str, int | str] = {"pid": event.pid, **(split_task_row(event.rest, columns) or {})}
                candidate = score_row(row, set(columns), 4, total)
                # A task the kernel never kills is never the victim, but may still be large.
                score = candidate.score if candidate is not None else -(1 << 62)
                scored.append((index, score, rss_pages(row)))
        keep = {i for i, _, _ in sorted(scored, key=lambda x: -x[1])[: MAX_TASK_ROWS // 2]}
        keep |= {i for i, _, _ in sorted(scored, key=lambda x: -x[2])[: MAX_TASK_ROWS // 2]}
        self.events = [e for i, e in enumerate(self.events) if not isinstance(e, ev.TaskRow) or i in keep]
        self.kept_rows = len(keep)


def table_columns(header: ev.TasksHeader | None, rows: Iterable[ev.TaskRow]) -> tuple[str, ...]:
    """The tasks table's columns: its header's; of a table cut before its header, those of the
    one kernel layout its rows fit (parse.TABLE_LAYOUTS), else only `pid` (the rest unnamed)."""
    if header is not None:
        return header.columns
    return columns_by_count(row.rest for row in rows) or ("pid",)


_E = TypeVar("_E", bound=ev.Event)


class ReportEvents:
    """A closed draft's events by kind, and its tasks table split into rows: what the freezer's
    rules (freeze.py, victim.py, constraint.py) read."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.by_type: dict[type, list[ev.Event]] = {}
        for event in draft.events:
            self.by_type.setdefault(type(event), []).append(event)

    def first(self, kind: type[_E]) -> _E | None:
        found = self.all(kind)
        return found[0] if found else None

    def all(self, kind: type[_E]) -> list[_E]:
        return self.by_type.get(kind, [])  # type: ignore[return-value]

    def columns(self) -> tuple[str, ...]:
        header = self.first(ev.TasksHeader)
        return table_columns(header if isinstance(header, ev.TasksHeader) else None, self.all(ev.TaskRow))

    def tasks(self) -> tuple[tuple[str, ...], list[dict[str, int | str]]]:
        columns = self.columns()
        rows: list[dict[str, int | str]] = []
        for event in self.all(ev.TaskRow):
            assert isinstance(event, ev.TaskRow)
            row = split_task_row(event.rest, columns)
            if row is not None:
                rows.append({"pid": event.pid, **row})
        return columns, rows

    def row_of(self, pid: int, tasks: list[dict[str, int | str]] | None) -> dict[str, int | str] | None:
        """The first row of `tasks` (the split table) for pid; with None, the same row found by
        splitting only the rows whose `[pid]` is pid (rows that do not split are skipped, as
        tasks() skips them)."""
        columns = self.columns()
        if tasks is None and "pid" in columns[1:]:
            tasks = self.tasks()[1]  # a header naming pid again: its column decides a row's pid
        if tasks is not None:
            return next((r for r in tasks if r.get("pid") == pid), None)
        for event in self.all(ev.TaskRow):
            if event.pid == pid and (row := split_task_row(event.rest, columns)) is not None:
                return {"pid": event.pid, **row}
        return None
