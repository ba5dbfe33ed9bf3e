"""Warning lines → warning runs: repeats of one warning, one run until a kill or an hour's quiet."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from oomtrace import events as ev
from oomtrace.episodes.moments import moment_of, record_gap
from oomtrace.frozen import replace
from oomtrace.keep import FirstAndLast
from oomtrace.model import KernelWarning, Moment
from oomtrace.records import Record

# Repeats of one warning further apart than this start a new run.
REPEAT_GAP_S = 3600.0

# How many recent warning lines (by their identity) are remembered to recognise one read again
# from a second source: a line repeated within one second is one entry.
SEEN_WARNINGS = 65536

_Key = tuple[str | None, str, str]
"""(host, kind, key): which runs a warning may join."""
_Identity = tuple[str | None, int | str, str]
"""(host, its second or its stamp as printed, message): one line of the log, wherever read."""


@dataclass
class _Run:
    """A warning run while it may still grow (its moments are built once, at the end)."""

    event: ev.EarlyWarning
    first_seq: int
    last: Record
    last_seq: int
    count: int


class WarningRuns:
    """The runs of a log, its first and last `kept` kept (the rest counted: `dropped`)."""

    def __init__(self, kept: int) -> None:
        self._runs: FirstAndLast[_Run] = FirstAndLast(kept, kept, self._run_dropped)
        self._open_runs: dict[_Key, _Run] = {}
        self._last_kill: dict[str | None, int] = {}
        """The seq of the latest kill per host: a warning run ends at a kill."""
        self._seen: OrderedDict[_Identity, dict[str, int]] = OrderedDict()
        """Recent warning lines by identity → how many times each source gave it."""
        self.read_twice = 0
        """Warning lines a second source gave again (a syslog beside kern.log, a .gz copy)."""
        self._suppressed: tuple[str, int, int] | None = None
        """A rate limit's `N callbacks suppressed` (source, line, N): repeats of the warning on
        the next line, the one it let through."""

    @property
    def dropped(self) -> int:
        return self._runs.dropped

    def killed(self, host: str | None, seq: int) -> None:
        """A kill on `host`: the same warning after it starts a new run."""
        self._last_kill[host] = seq

    def repeated(self, event: ev.Repeats, seq: int) -> None:
        """A line saying a warning came again: `count` more of the latest run whose text begins
        with the prefix (a paste's `NVRM: (repeats)`), or of the warning on the next line (a
        rate limit's `N callbacks suppressed`)."""
        record = event.record
        if event.prefix is None:
            self._suppressed = (record.source, record.line_no, event.count)
            return
        runs = [
            r
            for r in self._open_runs.values()
            if r.event.record.host == record.host
            and r.event.text.startswith(event.prefix)
            and r.last.source == record.source
            and r.last_seq > self._last_kill.get(record.host, 0)
        ]
        if runs:
            run = max(runs, key=lambda r: r.last_seq)
            run.last = record
            run.last_seq = seq
            run.count += event.count

    def add(self, event: ev.EarlyWarning, seq: int, watch_record: bool) -> None:
        """A warning line; `watch_record` when it comes from a `watch --record` file."""
        record = event.record
        if self._suppressed is not None:
            source, line, count = self._suppressed
            self._suppressed = None
            if source == record.source and record.line_no == line + 1:
                record = replace(record, repeats=record.repeats + count)
                event = replace(event, record=record)
        key = (record.host, event.kind, event.key)
        if watch_record and self._read_before(record, key):
            return
        if self._given_before(record):
            self.read_twice += 1 + record.repeats
            return
        run = self._open_runs.get(key)
        # A run ends at a kill: the same warning before the next kill belongs to the next incident.
        if run is not None and run.last_seq > self._last_kill.get(record.host, 0):
            gap = record_gap(run.last, record)
            if gap is None or gap <= REPEAT_GAP_S:
                # A driver can repeat a line hundreds of thousands of times: keep this cheap.
                run.last = record
                run.last_seq = seq
                run.count += 1 + record.repeats
                return
        run = _Run(event, seq, record, seq, 1 + record.repeats)
        self._runs.append(run)
        self._open_runs[key] = run

    def _given_before(self, record: Record) -> bool:
        """Is this line one another source gave already (kern.log and its .gz copy, a syslog and
        the kern.log of one machine)? Within one source, a line said twice in a second is two;
        across sources, the most times any one source gives a line is how many there were."""
        wall: datetime | None = record.stamp.wall
        identity = (
            record.host,
            int(wall.timestamp()) if wall is not None else record.stamp.raw,
            record.message,
        )
        given = self._seen.get(identity)
        if given is None:
            self._seen[identity] = {record.source: 1}
            if len(self._seen) > SEEN_WARNINGS:
                self._seen.popitem(last=False)
            return False
        count = given[record.source] = given.get(record.source, 0) + 1
        return any(count <= n for source, n in given.items() if source != record.source)

    def _read_before(self, record: Record, key: _Key) -> bool:
        """Is this line of a `watch --record` file (the lines behind the watcher's warnings, read
        after the logs) one a log gave already? A run of the same warning whose time spans it
        holds it: read again, it would be said twice in the story, as a run of its own."""
        wall = record.stamp.wall
        if wall is None:
            return False
        for run in self._runs:
            if (run.event.record.host, run.event.kind, run.event.key) != key:
                continue
            first, last = run.event.record.stamp.wall, run.last.stamp.wall
            if first is not None and last is not None and first <= wall <= last:
                return True
        return False

    def _run_dropped(self, run: _Run) -> None:
        key = (run.event.record.host, run.event.kind, run.event.key)
        if self._open_runs.get(key) is run:
            del self._open_runs[key]

    def warnings(self, resolve: Callable[[Moment], Moment]) -> list[KernelWarning]:
        return [
            KernelWarning(
                kind=r.event.kind,
                key=r.event.key,
                text=r.event.text,
                first=resolve(moment_of(r.event.record, r.first_seq)),
                last=resolve(moment_of(r.last, r.last_seq)),
                count=r.count,
                host=r.event.record.host,
                raw=(r.event.record.raw,) if r.last is r.event.record else (r.event.record.raw, r.last.raw),
            )
            for r in self._runs
        ]
