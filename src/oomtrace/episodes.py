"""Events → OOM episodes and collapsed warnings (a pure, streaming state machine); incidents.py joins them."""

from __future__ import annotations

import difflib
import functools
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple, TypeVar

from oomtrace import events as ev
from oomtrace.badness import rss_pages, score_row
from oomtrace.frozen import replace
from oomtrace.incidents import LOOKBACK_S as LOOKBACK_S  # watch reads it here
from oomtrace.incidents import incidents_of
from oomtrace.incidents import moment_gap as moment_gap
from oomtrace.keep import FirstAndLast
from oomtrace.model import (
    Analysis,
    Chosen,
    Crash,
    Elided,
    Episode,
    Frame,
    HostSpan,
    KernelWarning,
    KillIndex,
    MemcgCounter,
    Moment,
    Reap,
    SourceSummary,
    Trigger,
    UnitNote,
    Unparsed,
    Victim,
    Zone,
)
from oomtrace.parse import columns_by_count, split_task_row
from oomtrace.records import Record, Stamp
from oomtrace.services import bare_episode, cause_of, join_units, unit_of, userspace_episode, victim_label

# Repeats of one warning further apart than this start a new run.
REPEAT_GAP_S = 3600.0
# A report body line this long after the report's last line belongs to another report.
REPORT_GAP_S = 120.0
# What one report may hold in memory, however long it is (a hostile or broken log can make one
# report of a million lines): quoted lines, tasks-table rows, and every other report line.
MAX_RAW_LINES = 300
MAX_TASK_ROWS = 500
"""Past this many rows a table keeps the tasks the kernel would rank highest (by its badness,
estimated as the rows arrive) and the largest by rss; the victim is the top of the first."""
MAX_REPORT_EVENTS = 20_000
# A log of more kills than this keeps the first KEPT_FIRST and the last KEPT_LAST whole, and
# counts the ones between (model.Elided): a crash loop of 200,000 kills fits in ~100 MB.
KEPT_FIRST = 1000
KEPT_LAST = 1000
# Warning runs, unit records and crashes: kept the same way, these many first and last.
KEPT_RECORDS = 2000
# With --since/--until, kills further than this outside the range are dropped as they are read
# (the exact cut, which keeps whole incidents, comes after: select.between).
RANGE_MARGIN_S = 3600.0
# Victim names an elision counts one by one; the rest are "other".
_ELIDED_NAMES = 1000
# Closed reports kept open for the `oom_reaper: reaped process` line that follows their kill.
REAP_WINDOW = 32
# How many recent kills are remembered to recognise one read again from a second source.
SEEN_KILLS = 4096
MAX_FRAMES = 64
# How far (in records) a userspace killer's act may follow the line naming its victim.
NAMED_VICTIM_LINES = 50
MAX_UNPARSED_KEPT = 50
# A closed report past the first KEPT_FIRST is kept as its draft (and frozen only if it is
# still among the last KEPT_LAST at the end) when it holds at most this many events: a crash
# loop's middle kills are counted, never shown, and freezing each was a tenth of `list`. A
# bigger report is frozen at once, so that the drafts held stay small (1,000 of them: a crash
# loop of 75-line reports whose every figure differs peaks at 175 MB instead of 153).
DEFER_EVENTS = 120
# Lines that surely belong to an OOM report even when its header was cut off.
_STRONG = (ev.OomKillSummary, ev.TaskInMemcg, ev.TasksHeader, ev.KillChosen, ev.Killed)
_BODY = (
    ev.CpusetLine,
    ev.TaskLine,
    ev.HardwareName,
    ev.CallFrame,
    ev.SectionTitle,
    ev.MemInfoHeader,
    ev.Counters,
    ev.ZoneLine,
    ev.NodeLine,
    ev.SwapLine,
    ev.PagesLine,
    ev.TaskRow,
    ev.MemcgUsage,
    ev.MemcgStatsHeader,
    ev.MemcgStat,
)
# The lines of a report other than its header. Where no report is open, the body lines wait in
# _pending for a kill whose header was cut (_open takes them), so a reader that skips lines
# (sources/bigfile.py) reads back the ones it skipped before it hands one of these.
REPORT_LINE_EVENTS = (*_STRONG, *_BODY, ev.NoKillable, ev.OomPanic)
# How many body lines wait in _pending (the oldest go first).
PENDING_EVENTS = 4000
# The lines feed() hands to _body, as it tests them: those of no kind it tests before.
_FED_BEFORE = (
    ev.EarlyWarning,
    ev.OomInvoked,
    ev.Killed,
    ev.Reaped,
    ev.ProcessCrash,
    ev.VictimNamed,
    ev.UserspaceKill,
    ev.UnitRecord,
    ev.CallbacksSuppressed,
    ev.NoKillable,
    ev.OomPanic,
)
_REPORT_LINES = frozenset(t for t in (*_STRONG, *_BODY) if not issubclass(t, _FED_BEFORE))
_CONSTRAINTS = {
    "CONSTRAINT_NONE": "global",
    "CONSTRAINT_MEMCG": "memcg",
    "CONSTRAINT_CPUSET": "cpuset",
    "CONSTRAINT_MEMORY_POLICY": "mempolicy",
}
# Call-trace frames that say which limit was hit, when no summary line says so.
_MEMCG_FRAMES = frozenset(
    (
        "mem_cgroup_out_of_memory",
        "try_charge",
        "try_charge_memcg",
        "mem_cgroup_oom_synchronize",
        "mem_cgroup_oom",
    )
)
# Frames of the OOM killer's own stack dump: a CPU/PID line before them is the trigger's.
_OOM_FRAMES = frozenset(("dump_header", "oom_kill_process", "out_of_memory", "mem_cgroup_out_of_memory"))
_ALLOCATOR_FRAMES = frozenset(("__alloc_pages_slowpath", "__alloc_pages_may_oom", "__alloc_pages_nodemask"))
_OOM_WORDS = ("invoked oom-killer", "Killed process", "oom-kill:", "ill process")


@dataclass
class _Draft:
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
        self.last_line = record.line_no
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


@dataclass
class _Run:
    """A warning run while it may still grow (its moments are built once, at the end)."""

    event: ev.EarlyWarning
    first_seq: int
    last: Record
    last_seq: int
    count: int


class EpisodeBuilder:
    """Feed it every record (with its parsed event, if any) in input order; then `finish()`."""

    def __init__(self, since: datetime | None = None, until: datetime | None = None) -> None:
        self._seq = 0
        self._current: _Draft | None = None
        self._elided = _Elision()
        self._frozen: FirstAndLast[Episode | _Deferred] = FirstAndLast(
            KEPT_FIRST, KEPT_LAST, lambda kept: self._elided.add(_outline(kept))
        )
        """Finished kills (kernel reports without their events, userspace kills), in input order;
        a report that may yet be elided is kept unfrozen (_Deferred)."""
        self._since = since - timedelta(seconds=RANGE_MARGIN_S) if since is not None else None
        self._until = until + timedelta(seconds=RANGE_MARGIN_S) if until is not None else None
        self._outside = 0
        self._seen: OrderedDict[tuple[str | None, int, str, int], str] = OrderedDict()
        """Recent kills by (host, pid, victim, second) → the source they were read from."""
        self._read_twice = 0
        self._recent: deque[_Draft] = deque()
        """The last few closed drafts, still open to the reap line that follows a kill."""
        self._pending: deque[ev.Event] = deque(maxlen=PENDING_EVENTS)
        self._stream: tuple[str | None, str] | None = None
        """The (host, source) whose report state (_current, _recent, _pending) is loaded."""
        self._streams: dict[tuple[str | None, str], tuple[_Draft | None, deque[_Draft], deque[ev.Event]]] = {}
        """The report state of every other stream: a store or an export of many hosts interleaves
        their lines, and one host's lines must never land in another's report."""
        self._suppressed = 0
        self._runs: FirstAndLast[_Run] = FirstAndLast(KEPT_RECORDS, KEPT_RECORDS, self._run_dropped)
        self._open_runs: dict[tuple[str | None, str, str], _Run] = {}
        self._offsets: dict[tuple[str, int], datetime] = {}
        self._sources: dict[str, _SourceInfo] = {}
        self._moments: list[tuple[str, Stamp, int, int]] = []
        self._unparsed: list[Unparsed] = []
        self._unparsed_count = 0
        self._hosts: dict[str, None] = {}
        self._host_spans: dict[str, tuple[datetime, datetime]] = {}
        """Each host's first and last wall time: a host with no kill still has a span to show."""
        self._crashes: FirstAndLast[tuple[ev.ProcessCrash, int]] = FirstAndLast(KEPT_RECORDS, KEPT_RECORDS)
        self._unit_records: FirstAndLast[tuple[ev.UnitRecord, int]] = FirstAndLast(KEPT_RECORDS, KEPT_RECORDS)
        self._named: dict[tuple[str | None, str], tuple[ev.VictimNamed, int]] = {}
        """The process a userspace killer last named, per (host, source), awaiting its act."""
        self._last_kill: dict[str | None, int] = {}
        """The seq of the latest kill per host: a warning run ends at a kill."""

    # ---- input -------------------------------------------------------------------

    def begin_source(self, name: str, kind: str, boot_time: datetime | None = None) -> None:
        """Start reading a source; `boot_time` converts its uptimes to wall time."""
        self._close_current()
        self._sources[name] = _SourceInfo(kind)
        if boot_time is not None:
            self._offsets[(name, 0)] = boot_time

    def set_record_count(self, source: str, count: int) -> None:
        """The number of lines a prefiltered source holds (it fed only those that matter)."""
        self._sources.setdefault(source, _SourceInfo("file")).records = count

    def set_problem(self, source: str, problem: str) -> None:
        """Why a source was not read to its end: the summary says so."""
        self._sources.setdefault(source, _SourceInfo("file")).problem = problem

    def set_host_spans(self, spans: Mapping[str, tuple[datetime, datetime]]) -> None:
        """The span of each host as its source knows it (a journal reader that fed only the
        records that matter seeks each host's first and last entry)."""
        for host, (first, last) in spans.items():
            self._hosts.setdefault(host, None)
            self._widen(host, first, last)

    def _widen(self, host: str, first: datetime, last: datetime) -> None:
        known = self._host_spans.get(host)
        if known is not None:
            first, last = min(first, known[0]), max(last, known[1])
        self._host_spans[host] = (first, last)

    def feed(self, record: Record, event: ev.Event | None) -> None:
        self._seq += 1
        info = self._note_span(record)
        # A text log is one stream (a line naming no host, a continuation, is the last one's);
        # a journal or an export interleaves its hosts' entries: one stream each.
        stream = (record.host if record.separate else None, record.source)
        if stream != self._stream:
            self._switch(stream)
        if record.host is not None and record.host not in self._hosts:
            self._hosts[record.host] = None
        if event is not None:
            info.events += 1
        if event is None:
            if record.is_kernel and any(word in record.message for word in _OOM_WORDS):
                self._note_unparsed(record)
            return
        if type(event) in _REPORT_LINES:  # most events; _FED_BEFORE names the kinds tested below
            self._body(event)
            return
        if isinstance(event, ev.EarlyWarning):
            self._warning(event)
            if event.kind == "page-allocation-failure":
                # Its own Mem-Info dump follows: not part of any OOM report.
                self._pending.clear()
        elif isinstance(event, ev.OomInvoked):
            self._close_current()
            self._open(event, header=event)
        elif isinstance(event, ev.Killed):
            self._killed(event)
            self._last_kill[record.host] = self._seq
        elif isinstance(event, ev.Reaped):
            self._reaped(event)
        elif isinstance(event, ev.ProcessCrash):
            self._crashes.append((event, self._seq))
        elif isinstance(event, ev.VictimNamed):
            self._named[(record.host, record.source)] = (event, self._seq)
        elif isinstance(event, ev.UserspaceKill):
            event = self._with_named_victim(event)
            self._keep(userspace_episode(event, self._moment(record, self._seq)))
            self._last_kill[record.host] = self._seq
        elif isinstance(event, ev.UnitRecord):
            self._unit_records.append((event, self._seq))
        elif isinstance(event, ev.CallbacksSuppressed):
            self._suppressed += event.count
            # Rate-limited reports are records the log lost.
            self._warning(
                ev.EarlyWarning(event.record, "lost-messages", event.record.message.strip(), "ratelimit")
            )
        elif isinstance(event, (ev.NoKillable, ev.OomPanic)):
            draft = self._current or self._open(event, header=None)
            draft.add(event, self._seq)
        elif isinstance(event, (*_STRONG, *_BODY)):
            self._body(event)

    # ---- report assembly ----------------------------------------------------------

    def _open(self, event: ev.Event, header: ev.OomInvoked | None) -> _Draft:
        record = event.record
        draft = _Draft(
            seq=self._seq,
            source=record.source,
            host=record.host,
            first_stamp=record.stamp,
            last_stamp=record.stamp,
            first_line=record.line_no,
            last_line=record.line_no,
            header=header,
        )
        if header is None:
            # A report whose header was cut: take the body lines just before it.
            for earlier in self._pending:
                gap = _seconds(earlier.record.stamp, record.stamp)
                if gap is not None and abs(gap) > REPORT_GAP_S:
                    continue
                if earlier.record.source == record.source:
                    if not draft.events:
                        draft.first_stamp = earlier.record.stamp
                        draft.first_line = earlier.record.line_no
                    draft.add(earlier, self._seq)
            draft.suppressed = self._suppressed
        else:
            draft.add(header, self._seq)
        self._pending.clear()
        self._suppressed = 0
        self._current = draft
        return draft

    def _body(self, event: ev.Event) -> None:
        draft = self._current
        if isinstance(event, ev.OomKillSummary) and draft is not None and _summary_after_kill(draft, event):
            draft.add(event, self._seq)
            return
        if draft is not None and (draft.kill is not None or draft.source != event.record.source):
            draft = None
        if draft is not None:
            gap = _seconds(draft.last_stamp, event.record.stamp)
            if gap is not None and gap > REPORT_GAP_S:
                self._close_current()
                draft = None
        if draft is None:
            if isinstance(event, _STRONG):
                self._close_current()
                draft = self._open(event, header=None)
            else:
                self._pending.append(event)
                return
        if isinstance(event, ev.KillChosen):
            if draft.chosen is not None:
                self._close_current()
                draft = self._open(event, header=None)
            draft.chosen = event
        draft.add(event, self._seq)

    def _killed(self, event: ev.Killed) -> None:
        draft = self._current
        if draft is None or draft.kill is not None or draft.source != event.record.source:
            self._close_current()
            draft = self._open(event, header=None)
        else:
            gap = _seconds(draft.last_stamp, event.record.stamp)
            if gap is not None and gap > REPORT_GAP_S:
                self._close_current()
                draft = self._open(event, header=None)
        draft.add(event, self._seq)
        draft.kill = event
        draft.kill_seq = self._seq

    def _with_named_victim(self, kill: ev.UserspaceKill) -> ev.UserspaceKill:
        """A kill line that names no process, filled from the process its killer named a few
        lines before in the same record (the same pid, or the line gave none)."""
        if kill.comm is not None:
            return kill
        named = self._named.pop((kill.record.host, kill.record.source), None)
        if named is None:
            return kill
        event, seq = named
        if event.killer != kill.killer or self._seq - seq > NAMED_VICTIM_LINES:
            return kill
        if kill.pid is not None and kill.pid != event.pid:
            return kill
        badness = kill.badness if kill.badness is not None else event.badness
        return replace(kill, comm=event.comm, pid=event.pid, badness=badness)

    def _reaped(self, event: ev.Reaped) -> None:
        candidates = [self._current] if self._current else []
        candidates += reversed(self._recent)
        for draft in candidates:
            if draft is not None and draft.kill is not None and draft.kill.pid == event.pid:
                if draft.reap is None:
                    draft.reap = (event, self._seq)
                    draft.add(event, self._seq)
                return

    def _close_current(self) -> None:
        if self._current is not None:
            if self._recent and _header_quoted_after_kill(self._recent[-1], self._current):
                # The header was the kill's own, quoted after it: one report, not two.
                kill_draft, header = self._recent[-1], self._current.header
                kill_draft.header = header
                kill_draft.events.insert(0, header)  # type: ignore[arg-type]
                self._current = None
                return
            self._recent.append(self._current)
            self._current = None
            if len(self._recent) > REAP_WINDOW:
                self._freeze_oldest()

    def _freeze_oldest(self) -> None:
        draft = self._recent.popleft()
        if not draft.events:
            return
        freezer = _Freezer(draft, self)
        if self._frozen.filling_first() or len(draft.events) > DEFER_EVENTS:
            self._keep(freezer.episode(0))
        else:
            self._keep(freezer.outline(), freezer)

    def _keep(self, episode: Episode, freezer: _Freezer | None = None) -> None:
        """Keep a kill (unless outside the range or read twice); with `freezer`, `episode` is
        the report's outline and the freezer makes the whole episode if it is kept to the end."""
        time = self._resolve(episode.moment).time
        if time is not None and (
            (self._since is not None and time < self._since)
            or (self._until is not None and time > self._until)
        ):
            self._outside += 1
            return
        if self._already_kept(episode, time):
            self._read_twice += 1
            return
        self._frozen.append(episode if freezer is None else _Deferred(episode, freezer))

    def _already_kept(self, episode: Episode, time: datetime | None) -> bool:
        """The same kill read from a second source (kern.log and kern.log.1 overlapping, a
        syslog file beside the journal, a watcher's record beside the log it followed)."""
        victim = episode.victim
        if victim is None or victim.pid is None or time is None:
            return False
        second = int(time.timestamp())
        source = episode.moment.source
        # Two sources stamp one line a little apart (journal time against uptime plus boot time).
        for near in (second - 1, second, second + 1):
            first = self._seen.get((episode.host, victim.pid, victim.comm, near))
            if first is not None and first != source:
                return True
        self._seen[(episode.host, victim.pid, victim.comm, second)] = source
        if len(self._seen) > SEEN_KILLS:
            self._seen.popitem(last=False)
        return False

    def _run_dropped(self, run: _Run) -> None:
        key = (run.event.record.host, run.event.kind, run.event.key)
        if self._open_runs.get(key) is run:
            del self._open_runs[key]

    # ---- warnings ---------------------------------------------------------------

    def _warning(self, event: ev.EarlyWarning) -> None:
        record = event.record
        key = (record.host, event.kind, event.key)
        source = self._sources.get(record.source)
        if source is not None and source.kind == "watch-record" and self._read_before(record, key):
            return
        run = self._open_runs.get(key)
        # A run ends at a kill: the same warning before the next kill belongs to the next incident.
        if run is not None and run.last_seq > self._last_kill.get(record.host, 0):
            gap = record_gap(run.last, record)
            if gap is None or gap <= REPEAT_GAP_S:
                # A driver can repeat a line hundreds of thousands of times: keep this cheap.
                run.last = record
                run.last_seq = self._seq
                run.count += 1 + record.repeats
                return
        run = _Run(event, self._seq, record, self._seq, 1 + record.repeats)
        self._runs.append(run)
        self._open_runs[key] = run

    def _read_before(self, record: Record, key: tuple[str | None, str, str]) -> bool:
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

    # ---- bookkeeping --------------------------------------------------------------

    def _note_span(self, record: Record) -> _SourceInfo:
        """Counts the record in its source's summary and widens the spans it sets; returns the
        source's summary."""
        info = self._sources.get(record.source)
        if info is None:
            info = self._sources[record.source] = _SourceInfo("file")
        info.records += 1
        stamp = record.stamp
        if stamp.wall is None and stamp.uptime is None and stamp.clock is None:
            if record.ident is not None:
                info.recognised += 1
            return info
        info.recognised += 1
        if stamp.wall is not None and stamp.uptime is not None:
            boot = _minus_seconds(stamp.wall, stamp.uptime)
            if boot is not None:
                self._offsets.setdefault((record.source, stamp.boot), boot)
        if info.first is None:
            info.first = (record, self._seq)
        elif record.separate and stamp.wall is not None and _earlier(stamp, info.first):
            # Entries of a store read a host at a time (sources/journal.py) go back in time:
            # the span is from the earliest to the latest.
            info.first = (record, self._seq)
        if not (record.separate and stamp.wall is not None and _earlier(stamp, info.last)):
            info.last = (record, self._seq)
        if record.host is not None and stamp.wall is not None:
            self._widen(record.host, stamp.wall, stamp.wall)
        return info

    def _note_unparsed(self, record: Record) -> None:
        self._unparsed_count += 1
        if len(self._unparsed) < MAX_UNPARSED_KEPT:
            self._unparsed.append(Unparsed(record.source, record.line_no, record.message))

    def _moment(self, record: Record, seq: int) -> Moment:
        stamp = record.stamp
        return Moment(
            time=stamp.wall,
            uptime_s=stamp.uptime,
            raw=stamp.raw,
            source=record.source,
            line=record.line_no,
            boot=stamp.boot,
            seq=seq,
            clock_s=stamp.clock,
        )

    def _resolve(self, moment: Moment) -> Moment:
        """Fill a wall time from uptime once the boot time of that source is known."""
        if moment.time is not None or moment.uptime_s is None:
            return moment
        boot = self._offsets.get((moment.source, moment.boot))
        if boot is None:
            return moment
        time = _minus_seconds(boot, -moment.uptime_s)
        return replace(moment, time=time) if time is not None else moment

    # ---- output -----------------------------------------------------------------

    def _switch(self, stream: tuple[str | None, str]) -> None:
        if self._stream is not None:
            self._streams[self._stream] = (self._current, self._recent, self._pending)
        self._current, self._recent, self._pending = self._streams.pop(
            stream, (None, deque(), deque(maxlen=4000))
        )
        self._stream = stream

    def finish(self) -> Analysis:
        for stream in [*self._streams, self._stream]:
            if stream is not None:
                self._switch(stream)
                self._close_current()
                while self._recent:
                    self._freeze_oldest()
        # Boot times learnt after a report was frozen still give its uptimes a wall time.
        head = [self._resolved(_thawed(e)) for e in self._frozen.head()]
        tail = [self._resolved(_thawed(e)) for e in self._frozen.tail()]
        self._frozen = FirstAndLast(0, 0)
        notes = [
            UnitNote(
                u.unit,
                u.kind,
                u.detail,
                u.count,
                u.peak_kb,
                u.record.message,
                self._resolve(self._moment(u.record, seq)),
                u.record.host,
            )
            for u, seq in self._unit_records
        ]
        joined = join_units(head + tail, notes)
        if self._elided.kills:
            # Number around the kills not kept: a kill's number says how many came before it.
            boundary = max((e.moment.seq for e in head), default=0)
            episodes = _numbered([e for e in joined if e.moment.seq <= boundary])
            episodes += _numbered(
                [e for e in joined if e.moment.seq > boundary], start=len(episodes) + self._elided.kills + 1
            )
        else:
            episodes = _numbered(joined)
        warnings = [
            KernelWarning(
                kind=r.event.kind,
                key=r.event.key,
                text=r.event.text,
                first=self._resolve(self._moment(r.event.record, r.first_seq)),
                last=self._resolve(self._moment(r.last, r.last_seq)),
                count=r.count,
                host=r.event.record.host,
            )
            for r in self._runs
        ]
        incidents = incidents_of(episodes, warnings)
        sources = tuple(self._source_summary(name, info) for name, info in self._sources.items())
        return Analysis(
            episodes=tuple(episodes),
            warnings=tuple(warnings),
            incidents=tuple(incidents),
            sources=sources,
            unparsed=tuple(self._unparsed),
            unparsed_count=self._unparsed_count,
            hosts=tuple(self._hosts),
            host_spans=tuple(HostSpan(h, *self._host_spans.get(h, (None, None))) for h in self._hosts),
            crashes=tuple(
                Crash(e.comm, e.pid, e.text, self._resolve(self._moment(e.record, seq)))
                for e, seq in self._crashes
            ),
            outside_range=self._outside,
            read_twice=self._read_twice,
            elided=self._elided.summary(self._runs.dropped, self._resolve) if self._elided.kills else None,
        )

    def _source_summary(self, name: str, info: _SourceInfo) -> SourceSummary:
        def moment(value: tuple[Record, int] | None) -> Moment | None:
            if value is None:
                return None
            record, seq = value
            return self._resolve(self._moment(record, seq))

        return SourceSummary(
            name=name,
            kind=info.kind,
            records=info.records,
            recognised=info.recognised,
            events=info.events,
            first=moment(info.first),
            last=moment(info.last),
            problem=info.problem,
        )

    def _draft_moment(self, draft: _Draft) -> Moment:
        if draft.kill is not None:
            return self._moment(draft.kill.record, draft.kill_seq)
        first = draft.events[0].record
        return self._moment(first, draft.seq)

    def _resolved(self, episode: Episode) -> Episode:
        reaped = episode.reaped
        if reaped is not None and reaped.moment.time is None:
            reaped = replace(reaped, moment=self._resolve(reaped.moment))
        return replace(
            episode,
            moment=self._resolve(episode.moment),
            began=self._resolve(episode.began),
            reaped=reaped,
            unit=episode.unit or unit_of(episode.task_memcg),
        )


_E = TypeVar("_E", bound=ev.Event)


class _Freezer:
    """Turns a draft's events into an Episode: the per-field rules live here."""

    def __init__(self, draft: _Draft, builder: EpisodeBuilder) -> None:
        self.draft = draft
        self.builder = builder
        self.by_type: dict[type, list[ev.Event]] = {}
        for event in draft.events:
            self.by_type.setdefault(type(event), []).append(event)

    def first(self, kind: type[_E]) -> _E | None:
        found = self.all(kind)
        return found[0] if found else None

    def all(self, kind: type[_E]) -> list[_E]:
        return self.by_type.get(kind, [])  # type: ignore[return-value]

    def episode(self, number: int) -> Episode:
        draft = self.draft
        task_line = self.first(ev.TaskLine)
        summary = self.first(ev.OomKillSummary)
        task_in = self.first(ev.TaskInMemcg)
        columns, tasks = self.tasks()
        constraint, constraint_from = self.constraint(summary, task_in)
        (memcg, memcg_from), task_memcg = self.memcgs(summary, task_in)
        mem_info = self.mem_info()
        pages = {e.kind: e.count for e in self.all(ev.PagesLine)}
        zones = tuple(Zone(e.node, e.zone, dict(e.values_kb)) for e in self.all(ev.ZoneLine))
        victim = self.victim(summary, tasks)
        page_size_kb, page_size_from = _page_size(victim, tasks, mem_info, zones)
        stats_header = self.first(ev.MemcgStatsHeader)
        kernel = task_line.kernel if isinstance(task_line, ev.TaskLine) else None
        return Episode(
            id=number,
            killer="kernel",
            moment=self.builder._resolve(self.builder._draft_moment(draft)),
            began=self.builder._resolve(self.builder._moment(draft.events[0].record, draft.seq)),
            host=draft.host,
            trigger=self.trigger(task_line),
            constraint=constraint,
            constraint_from=constraint_from,
            memcg=memcg,
            memcg_from=memcg_from,
            task_memcg=task_memcg,
            victim=victim,
            chosen=Chosen(draft.chosen.pid, draft.chosen.comm, draft.chosen.score) if draft.chosen else None,
            task_columns=columns,
            tasks=tuple(tasks),
            kernel=kernel,
            hardware=h.name if isinstance(h := self.first(ev.HardwareName), ev.HardwareName) else None,
            call_trace=tuple(_frame(e) for e in self.all(ev.CallFrame)[:MAX_FRAMES]),
            mem_info=mem_info,
            zones=zones,
            node_counters={e.node: dict(e.values_kb) for e in self.all(ev.NodeLine)},
            swap_total_kb=self.swap("total"),
            swap_free_kb=self.swap("free"),
            pages=pages,
            page_size_kb=page_size_kb,
            page_size_from=page_size_from,
            memcg_usage=tuple(
                MemcgCounter(e.kind, e.usage_kb, e.limit_kb, e.failcnt) for e in self.all(ev.MemcgUsage)
            ),
            memcg_stats_path=stats_header.path if isinstance(stats_header, ev.MemcgStatsHeader) else None,
            memcg_stats=self.memcg_stats(stats_header),
            reaped=self.reap(),
            no_killable=bool(self.all(ev.NoKillable)),
            panic=p.text if isinstance(p := self.first(ev.OomPanic), ev.OomPanic) else None,
            suppressed_reports=draft.suppressed,
            missing=self.missing(summary, kernel),
            lines=(draft.first_line, draft.last_line),
            raw_lines=tuple(draft.raw_lines),
            trimmed=self.trimmed(len(tasks)),
            table_rows=self.draft.task_rows if self.draft.task_rows > len(tasks) else None,
        )

    def outline(self) -> Episode:
        """What keeping and eliding a kill read of it (when, who, which limit), as the whole
        episode has them; the report's other fields left empty."""
        draft = self.draft
        summary = self.first(ev.OomKillSummary)
        constraint, _ = self.constraint(summary, self.first(ev.TaskInMemcg))
        moment = self.builder._resolve(self.builder._draft_moment(draft))
        # No tasks list: the victim splits only the rows it looks up (most of a deferred
        # report's cost was splitting every row of its table to find one).
        return bare_episode("kernel", moment, draft.host, victim=self.victim(summary), constraint=constraint)

    def trimmed(self, kept_rows: int) -> tuple[str, ...]:
        draft = self.draft
        notes = []
        if draft.task_rows > kept_rows:
            notes.append(
                f"tasks table: {kept_rows:,} of {draft.task_rows:,} rows kept (those the kernel "
                "ranks highest and the largest by rss)"
            )
        if draft.raw_cut:
            notes.append(f"quoted lines: the first {MAX_RAW_LINES:,} of the report's lines")
        if draft.dropped_events:
            notes.append(
                f"report: {draft.dropped_events:,} lines past the first {MAX_REPORT_EVENTS:,} not read"
            )
        return tuple(notes)

    def trigger(self, task_line: ev.Event | None) -> Trigger | None:
        header = self.draft.header
        if header is None:
            return self._trigger_from_task_line(task_line)
        cpuset = self.first(ev.CpusetLine)
        summary = self.first(ev.OomKillSummary)
        pid = uid = None
        if isinstance(task_line, ev.TaskLine):
            pid, uid = task_line.pid, task_line.uid
        cpuset_value = cpuset.cpuset if isinstance(cpuset, ev.CpusetLine) else None
        mems = cpuset.mems_allowed if isinstance(cpuset, ev.CpusetLine) else None
        if isinstance(summary, ev.OomKillSummary):
            cpuset_value = cpuset_value or summary.fields.get("cpuset")
            mems = mems or summary.fields.get("mems_allowed")
        return Trigger(
            comm=header.comm,
            pid=pid,
            uid=uid,
            gfp_mask=header.gfp_mask,
            gfp_flags=header.gfp_flags,
            order=header.order,
            oom_score_adj=header.oom_score_adj,
            cpuset=cpuset_value,
            mems_allowed=mems,
        )

    def _trigger_from_task_line(self, task_line: ev.Event | None) -> Trigger | None:
        """A report cut before its header still names the task that invoked the killer: the
        `CPU: N PID: N Comm: NAME` line its stack dump begins with (dump_header prints the
        current task's stack). Only where the call trace is the OOM killer's, so that a stack
        of some other warning never names the trigger."""
        if not isinstance(task_line, ev.TaskLine):
            return None
        functions = {e.function.split(".")[0] for e in self.all(ev.CallFrame)}
        if not functions & _OOM_FRAMES:
            return None
        return Trigger(task_line.comm, task_line.pid, task_line.uid, None, None, None, None, None, None)

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

    def constraint(self, summary: ev.Event | None, task_in: ev.Event | None) -> tuple[str | None, str | None]:
        if isinstance(summary, ev.OomKillSummary):
            value = summary.fields.get("constraint")
            if value in _CONSTRAINTS:
                return _CONSTRAINTS[value], "oom-kill summary"
            close = difflib.get_close_matches((value or "").strip().upper(), _CONSTRAINTS, n=1, cutoff=0.85)
            if close:
                return _CONSTRAINTS[close[0]], f"oom-kill summary (read {value!r} as {close[0]})"
            if summary.global_oom:
                return "global", "oom-kill summary"
            if "oom_memcg" in summary.fields:
                return "memcg", "oom-kill summary"
        draft = self.draft
        if draft.kill is not None and draft.kill.container is not None:
            return "memcg", "kill line (OpenVZ container)"
        memcg_signs = (
            task_in is not None
            or bool(self.all(ev.MemcgUsage))
            or bool(self.all(ev.MemcgStatsHeader))
            or (draft.kill is not None and draft.kill.memcg)
            or (draft.chosen is not None and draft.chosen.memcg)
        )
        if memcg_signs:
            return "memcg", "memory cgroup lines"
        if draft.kill is not None and draft.kill.global_lead:
            return "global", "kill line prefix"
        if draft.chosen is not None and draft.chosen.record.message.lstrip().lower().startswith(
            "out of memory"
        ):
            return "global", "kill line prefix"
        from_trace = self.constraint_from_trace()
        if from_trace is not None:
            return from_trace, "call trace (inferred)"
        report_body = bool(self.all(ev.MemInfoHeader)) or bool(self.all(ev.TasksHeader))
        if draft.header is not None and report_body:
            # 2.6 and 3.x print no constraint; a memcg OOM prints its cgroup's usage instead of
            # Mem-Info. A cpuset or mempolicy OOM looks the same: hence "inferred".
            return "global", "inferred: no memory cgroup lines in the report"
        return None, None

    def constraint_from_trace(self) -> str | None:
        """memcg when the allocation failed charging a cgroup, global when the page allocator
        itself gave up; frames marked `?` are stale stack words, never counted."""
        # `__alloc_pages_slowpath.constprop.0`: the compiler's clone of the same function.
        functions = {e.function.split(".")[0] for e in self.all(ev.CallFrame) if e.reliable}
        if functions & _MEMCG_FRAMES:
            return "memcg"
        if "out_of_memory" in functions and functions & _ALLOCATOR_FRAMES:
            return "global"
        return None

    def memcgs(
        self, summary: ev.Event | None, task_in: ev.Event | None
    ) -> tuple[tuple[str | None, str | None], str | None]:
        """((the limited cgroup, the line that named it), the victim's cgroup)."""
        memcg = self.memcg_and_source(summary, task_in)
        task_memcg = summary.fields.get("task_memcg") if isinstance(summary, ev.OomKillSummary) else None
        if isinstance(task_in, ev.TaskInMemcg):
            task_memcg = task_memcg or task_in.task_memcg
        return memcg, task_memcg

    def memcg_and_source(
        self, summary: ev.Event | None, task_in: ev.Event | None
    ) -> tuple[str | None, str | None]:
        if isinstance(summary, ev.OomKillSummary) and summary.fields.get("oom_memcg"):
            return summary.fields["oom_memcg"], "oom-kill summary"
        if isinstance(task_in, ev.TaskInMemcg):
            return task_in.memcg, "Task in line"
        kill = self.draft.kill
        if kill is not None and kill.container is not None:
            return kill.container, "kill line (OpenVZ container)"
        stats = self.first(ev.MemcgStatsHeader)
        if isinstance(stats, ev.MemcgStatsHeader):
            # Only a memory cgroup OOM prints cgroup stats, the limited cgroup's first.
            return stats.path, "memory cgroup stats (inferred)"
        return None, None

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

    def victim(
        self, summary: ev.Event | None, tasks: list[dict[str, int | str]] | None = None
    ) -> Victim | None:
        """The killed task: from the kill line, its gaps filled from the summary and the tasks
        table (each marked); without a kill line, the summary's or the chosen task, marked so.
        `tasks` is the split table where the caller has it; without it the rows are split as
        the lookups need them (the same Victim either way)."""
        kill = self.draft.kill
        fields = summary.fields if isinstance(summary, ev.OomKillSummary) else {}
        summary_pid = int(fields["pid"]) if fields.get("pid", "").isdigit() else None
        if kill is None:
            return self._victim_without_kill(fields, summary_pid, tasks)
        pid, pid_from = kill.pid, None
        if pid is None and summary_pid is not None:
            pid, pid_from = summary_pid, "oom-kill summary"
        # The row fills only what the kill line lacks: looked up then alone (a crash loop's kill
        # lines lack nothing, and splitting the victim's row, new each time, was 3 % of `list`).
        uid_missing = kill.uid is None and not fields.get("uid", "").isdigit()
        lacks = kill.comm_cut or kill.oom_score_adj is None or uid_missing
        row = self.row_of(pid, tasks) if pid is not None and lacks else None
        if pid is None and kill.comm and not kill.comm_cut:
            rows = [
                r for r in (tasks if tasks is not None else self.tasks()[1]) if r.get("name") == kill.comm
            ]
            if len(rows) == 1:
                row = rows[0]
                pid, pid_from = int(row["pid"]), "tasks table (by name)"
        comm, comm_from = kill.comm, None
        if kill.comm_cut:
            fuller = fields.get("task") if summary_pid == pid and pid is not None else None
            if fuller and fuller.startswith(comm):
                comm, comm_from = fuller, "oom-kill summary"
            elif row is not None and str(row.get("name", "")).startswith(comm) and row.get("name"):
                comm, comm_from = str(row["name"]), "tasks table"
        adj, adj_from = kill.oom_score_adj, "kill line"
        if adj is None and row is not None:
            adj, row_adj_from = _row_adj(row)
            adj_from = row_adj_from or adj_from
        uid = kill.uid
        if uid is None and fields.get("uid", "").isdigit():
            uid = int(fields["uid"])
        if uid is None and row is not None and isinstance(row.get("uid"), int):
            uid = int(row["uid"])
        return Victim(
            comm=comm,
            pid=pid,
            uid=uid,
            total_vm_kb=kill.total_vm_kb,
            anon_rss_kb=kill.anon_rss_kb,
            file_rss_kb=kill.file_rss_kb,
            shmem_rss_kb=kill.shmem_rss_kb,
            pgtables_kb=kill.pgtables_kb,
            oom_score_adj=adj,
            oom_score_adj_from=adj_from if adj is not None else None,
            comm_from=comm_from,
            pid_from=pid_from,
        )

    def _victim_without_kill(
        self, fields: Mapping[str, str], summary_pid: int | None, tasks: list[dict[str, int | str]] | None
    ) -> Victim | None:
        chosen = self.draft.chosen
        if summary_pid is not None and fields.get("task"):
            comm, pid, source = fields["task"], summary_pid, "oom-kill summary (no kill line)"
        elif chosen is not None:
            comm, pid, source = chosen.comm, chosen.pid, "the task the kernel chose (no kill line)"
        else:
            return None
        row = self.row_of(pid, tasks)
        adj, adj_from = _row_adj(row) if row is not None else (None, None)
        uid = int(fields["uid"]) if fields.get("uid", "").isdigit() else None
        return Victim(
            comm=comm,
            pid=pid,
            uid=uid,
            total_vm_kb=None,
            anon_rss_kb=None,
            file_rss_kb=None,
            shmem_rss_kb=None,
            pgtables_kb=None,
            oom_score_adj=adj,
            oom_score_adj_from=adj_from,
            comm_from=source,
            pid_from=source,
        )

    def mem_info(self) -> dict[str, int]:
        values: dict[str, int] = {}
        seen_header = False
        for event in self.draft.events:
            if isinstance(event, ev.MemInfoHeader):
                seen_header = True
            elif isinstance(event, ev.Counters) and (seen_header or not values):
                values.update(event.values)
        return values

    def swap(self, kind: str) -> int | None:
        for event in self.all(ev.SwapLine):
            assert isinstance(event, ev.SwapLine)
            if event.kind == kind:
                return event.kb
        return None

    def memcg_stats(self, header: ev.Event | None) -> dict[str, int]:
        stats: dict[str, int] = {}
        if isinstance(header, ev.MemcgStatsHeader):
            stats.update({f"{k}_kb": v for k, v in header.inline_kb.items()})
        for event in self.all(ev.MemcgStat):
            assert isinstance(event, ev.MemcgStat)
            stats[event.name] = event.value
        return stats

    def reap(self) -> Reap | None:
        if self.draft.reap is None:
            return None
        event, seq = self.draft.reap
        moment = self.builder._resolve(self.builder._moment(event.record, seq))
        return Reap(event.pid, event.comm, event.anon_rss_kb, event.file_rss_kb, event.shmem_rss_kb, moment)

    def missing(self, summary: ev.Event | None, kernel: str | None) -> tuple[str, ...]:
        draft = self.draft
        missing = []
        if draft.header is None:
            missing.append("header")
        if not self.all(ev.TaskLine) and draft.header is not None:
            missing.append("cpu_line")
        memcg_report = bool(self.all(ev.MemcgUsage)) or bool(self.all(ev.TaskInMemcg))
        if not self.all(ev.MemInfoHeader) and not self.all(ev.Counters) and not memcg_report:
            # A memory cgroup OOM prints the cgroup's usage and stats instead of Mem-Info.
            missing.append("mem_info")
        whole = draft.header is not None and draft.kill is not None
        if not self.all(ev.TasksHeader) and not self.all(ev.TaskRow) and not whole:
            # Between a header and a kill line the table is absent by choice
            # (vm.oom_dump_tasks=0), not cut off.
            missing.append("tasks")
        elif self.all(ev.TaskRow) and not self.all(ev.TasksHeader):
            # A table cut before its header: its columns are named by their count, if at all.
            missing.append("tasks_header")
        if summary is None and kernel is not None and _kernel_at_least(kernel, (4, 19)):
            missing.append("summary")
        if draft.kill is None and not self.all(ev.NoKillable) and not self.all(ev.OomPanic):
            missing.append("kill")
        return tuple(missing)


class _Deferred(NamedTuple):
    """A kill kept unfrozen: its outline, and the freezer that makes the whole episode."""

    outline: Episode
    freezer: _Freezer


def _outline(kept: Episode | _Deferred) -> Episode:
    return kept.outline if isinstance(kept, _Deferred) else kept


def _thawed(kept: Episode | _Deferred) -> Episode:
    # The freezer resolves times with the boot times known now, a superset of those known when
    # the report closed (EpisodeBuilder._resolved fills the rest either way).
    return kept.freezer.episode(0) if isinstance(kept, _Deferred) else kept


def _frame(event: ev.CallFrame) -> Frame:
    return _shared_frame(event.function, event.module, event.reliable)


@functools.lru_cache(maxsize=4096)
def _shared_frame(function: str, module: str | None, reliable: bool) -> Frame:
    """One Frame for each (function, module, reliable): a crash loop's reports print the same
    stack, and a Frame is frozen, so every episode can hold the same one."""
    return Frame(function, module, reliable)


def _header_quoted_after_kill(kill_draft: _Draft, header_draft: _Draft) -> bool:
    """Is a report of nothing but its header the header of the kill just before it? A write-up
    may quote `Out of memory: Killed process ...` first and `X invoked oom-killer` next. Only
    when the kill line is all there is of its report, the header is the next line, at the same
    second, and nothing followed it (a header with a body or a kill of its own is a report of its
    own). A kill with its report before it (tasks rows, Mem-Info, an `oom-kill:` summary) is
    complete: in a cascade the next report's header follows it at once (RHEL 6's `Killed process
    1153, UID 0, (sniproxy)` then `named invoked oom-killer`), and is that report's."""
    header = header_draft.header
    kill = kill_draft.kill
    if header is None or kill is None or kill_draft.header is not None:
        return False
    if not kill_draft.events or kill_draft.events[0] is not kill:
        return False
    if header_draft.events != [header] or kill_draft.source != header_draft.source:
        return False
    if header_draft.first_line - kill_draft.last_line != 1:
        return False
    gap = _seconds(kill_draft.last_stamp, header.record.stamp)
    return gap is not None and abs(gap) <= 1.0


def _summary_after_kill(draft: _Draft, summary: ev.OomKillSummary) -> bool:
    """Is this `oom-kill:` summary the one of the kill just read? The kernel prints it before
    the kill line; a write-up may quote it after (`Killed process 124531 (ds4-server) ...` then
    `oom-kill:constraint=CONSTRAINT_NONE,...,global_oom`). It is when it is the next line, the
    report has none yet, and the task and pid it names (if any) are the kill's."""
    kill = draft.kill
    record = summary.record
    if kill is None or draft.source != record.source or record.line_no - draft.last_line > 1:
        return False
    if any(isinstance(e, ev.OomKillSummary) for e in draft.events):
        return False
    gap = _seconds(draft.last_stamp, record.stamp)
    if gap is not None and abs(gap) > 1.0:
        return False
    pid, task = summary.fields.get("pid", "").strip(), summary.fields.get("task", "").strip()
    if pid and (kill.pid is None or pid != str(kill.pid)):
        return False
    return not task or task == kill.comm


def _row_adj(row: Mapping[str, int | str]) -> tuple[int | None, str | None]:
    """The adj in a task's row: its column, or in a row whose header was cut off the last number
    (every kernel since 2.6.36 ends the table with `oom_score_adj name`)."""
    adj = row.get("oom_score_adj")
    if isinstance(adj, int):
        return adj, "tasks table"
    numbered = sorted((int(k[3:]), v) for k, v in row.items() if k.startswith("col") and k[3:].isdigit())
    if len(numbered) >= 6 and isinstance(numbered[-1][1], int):
        return numbered[-1][1], "tasks table (header cut off: its last number)"
    return None, None


def _numbered(episodes: list[Episode], start: int = 1) -> list[Episode]:
    """Input order, or time order when every episode has a wall time (merged sources), numbered."""
    if all(e.moment.time is not None for e in episodes):
        ordered = sorted(episodes, key=lambda e: (e.moment.time, e.moment.seq))
    else:
        ordered = sorted(episodes, key=lambda e: e.moment.seq)
    return [replace(e, id=number) for number, e in enumerate(ordered, start=start)]


class _Elision:
    """What the kills not kept had in common: how many, when, who died and why; and where each
    was, so that `why PID` can still find one."""

    def __init__(self) -> None:
        self.kills = 0
        self.first: Moment | None = None
        self.last: Moment | None = None
        self.victims: Counter[str] = Counter()
        self.causes: Counter[str] = Counter()
        self.spans: dict[str, tuple[Moment, Moment]] = {}
        self.index = KillIndex()

    def add(self, episode: Episode) -> None:
        self.kills += 1
        if self.first is None:
            self.first = episode.moment
        self.last = episode.moment
        name = victim_label(episode)
        if name not in self.victims and len(self.victims) >= _ELIDED_NAMES:
            name = "(other)"
        self.victims[name] += 1
        self.spans[name] = (self.spans.get(name, (episode.moment,))[0], episode.moment)
        self.causes[cause_of(episode)] += 1
        self.index.add(episode.victim.pid if episode.victim is not None else None, episode.moment)

    def summary(self, runs_dropped: int, resolve: Callable[[Moment], Moment]) -> Elided:
        self.index.resolve(resolve)
        return Elided(
            kills=self.kills,
            first=resolve(self.first) if self.first is not None else None,
            last=resolve(self.last) if self.last is not None else None,
            victims=tuple(self.victims.most_common(10)),
            warning_runs=runs_dropped,
            kept_first=KEPT_FIRST,
            kept_last=KEPT_LAST,
            causes=tuple(self.causes.most_common()),
            spans=tuple(
                (name, count, resolve(self.spans[name][0]), resolve(self.spans[name][1]))
                for name, count in self.victims.most_common()
            ),
            index=self.index,
        )


def _earlier(stamp: Stamp, kept: tuple[Record, int] | None) -> bool:
    """Whether a stamp is before the wall time of a kept (record, seq)."""
    if kept is None:
        return False
    wall = kept[0].stamp.wall
    return wall is not None and stamp.wall is not None and stamp.wall < wall


class _SourceInfo:
    """What the summary says of one source, counted as its records are fed (typed fields: a dict
    of objects needed a conversion and a type-checker exemption at each count)."""

    __slots__ = ("events", "first", "kind", "last", "problem", "recognised", "records")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.records = 0
        self.recognised = 0
        self.events = 0
        self.first: tuple[Record, int] | None = None
        """The first record and its seq."""
        self.last: tuple[Record, int] | None = None
        self.problem: str | None = None


def _kernel_at_least(release: str, version: tuple[int, int]) -> bool:
    parts = release.split(".")
    try:
        return (int(parts[0]), int(parts[1].split("-")[0])) >= version
    except (ValueError, IndexError):
        return False


_PAGE_SIZES = (4, 8, 16, 64)


def _nearest_page_size(ratio: float) -> int | None:
    for size in _PAGE_SIZES:
        if abs(ratio - size) <= size * 0.1:
            return size
    return None


def table_columns(header: ev.TasksHeader | None, rows: Iterable[ev.TaskRow]) -> tuple[str, ...]:
    """The tasks table's columns: its header's; of a table cut before its header, those of the
    one kernel layout its rows fit (parse.TABLE_LAYOUTS), else only `pid` (the rest unnamed)."""
    if header is not None:
        return header.columns
    return columns_by_count(row.rest for row in rows) or ("pid",)


def _page_size(
    victim: Victim | None,
    tasks: list[dict[str, int | str]],
    mem_info: dict[str, int],
    zones: tuple[Zone, ...],
) -> tuple[int, str]:
    """Page size in KiB: 4 on most machines, but 8/16/64 KiB pages exist (sparc64, arm64)."""
    if victim is not None:
        row = next((r for r in tasks if r.get("pid") == victim.pid), None)
        rss_pages = row.get("rss") if row else None
        if isinstance(rss_pages, int) and rss_pages > 256:
            rss_kb = (victim.anon_rss_kb or 0) + (victim.file_rss_kb or 0) + (victim.shmem_rss_kb or 0)
            size = _nearest_page_size(rss_kb / rss_pages)
            if size:
                return size, "victim rss: kill line kB / tasks table pages"
        if row and all(isinstance(row.get(c), int) for c in ("rss_anon", "rss_file", "rss_shmem")):
            pages = sum(int(row[c]) for c in ("rss_anon", "rss_file", "rss_shmem"))
            rss_kb = (victim.anon_rss_kb or 0) + (victim.file_rss_kb or 0) + (victim.shmem_rss_kb or 0)
            if pages > 256:
                size = _nearest_page_size(rss_kb / pages)
                if size:
                    return size, "victim rss: kill line kB / tasks table pages"
    free_pages = mem_info.get("free")
    zone_free = sum(z.values_kb.get("free", 0) for z in zones)
    if free_pages and zone_free and free_pages > 256:
        size = _nearest_page_size(zone_free / free_pages)
        if size:
            return size, "Mem-Info free pages / zone free kB"
    return 4, "assumed"


def _seconds(a: Stamp, b: Stamp) -> float | None:
    """b - a in seconds when both stamps can be compared, else None."""
    if a.wall is not None and b.wall is not None:
        return (b.wall - a.wall).total_seconds()
    if a.uptime is not None and b.uptime is not None and a.boot == b.boot:
        return b.uptime - a.uptime
    if a.clock is not None and b.clock is not None:
        return b.clock - a.clock
    return None


def _minus_seconds(time: datetime, seconds: float) -> datetime | None:
    """`time` less `seconds`, or None past the years a datetime holds (a mangled line's uptime
    of 392915700597 s, 12,000 years, found by fuzz/fuzz_lines.py): no boot time is learnt."""
    try:
        return time - timedelta(seconds=seconds)
    except OverflowError:
        return None


def record_gap(a: Record, b: Record) -> float | None:
    """b - a in seconds as moment_gap would say for their moments, without building them; the
    gap that decides whether a repeated warning joins its run."""
    if a.stamp.wall is not None and b.stamp.wall is not None:
        return (b.stamp.wall - a.stamp.wall).total_seconds()
    if a.source != b.source:
        return None
    return _seconds(a.stamp, b.stamp)
