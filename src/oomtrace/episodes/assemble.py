"""Report lines → drafts: which lines belong to which kernel report, decided here and only here.

The rules of assembly: a header opens a report; body lines join the open report of their
stream (a source, or a host of a store) unless they come REPORT_GAP_S after it; body lines
with no report open wait for a kill whose header was cut; a kill with its body is complete,
and a header after it opens the next report (the cascade), unless the kill line was all there
was of its report and the header is quoted on the very next line (_header_quoted_after_kill).
A closed report stays open to its `oom_reaper` line for REAP_WINDOW reports, then goes to the
builder. The freezer and the incident rules read what was decided here; they never regroup.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from oomtrace import events as ev
from oomtrace.episodes.draft import Draft
from oomtrace.episodes.moments import seconds

# A report body line this long after the report's last line belongs to another report.
REPORT_GAP_S = 120.0
# Closed reports kept open for the `oom_reaper: reaped process` line that follows their kill.
REAP_WINDOW = 32
# Lines that surely belong to an OOM report even when its header was cut off.
STRONG = (ev.OomKillSummary, ev.TaskInMemcg, ev.TasksHeader, ev.KillChosen, ev.Killed)
BODY = (
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
REPORT_LINE_EVENTS = (*STRONG, *BODY, ev.NoKillable, ev.OomPanic)
# How many body lines wait in _pending (the oldest go first).
PENDING_EVENTS = 4000

Stream = tuple[str | None, str]
"""(host, source): a text log is one stream; a journal or an export one per host."""


class ReportAssembler:
    """Groups report lines into drafts, one stream at a time; each draft, once past the reap
    window, goes to `closed` in input order (per stream)."""

    def __init__(self, closed: Callable[[Draft], None]) -> None:
        self._closed = closed
        self._current: Draft | None = None
        self._recent: deque[Draft] = deque()
        """The last few closed drafts, still open to the reap line that follows a kill."""
        self._pending: deque[ev.Event] = deque(maxlen=PENDING_EVENTS)
        self._stream: Stream | None = None
        """The stream whose report state (_current, _recent, _pending) is loaded."""
        self._streams: dict[Stream, tuple[Draft | None, deque[Draft], deque[ev.Event]]] = {}
        """The report state of every other stream: a store or an export of many hosts interleaves
        their lines, and one host's lines must never land in another's report."""
        self._suppressed = 0

    @property
    def current(self) -> Draft | None:
        """The report being read in the loaded stream, if any."""
        return self._current

    def switch(self, stream: Stream) -> None:
        if self._stream is not None:
            self._streams[self._stream] = (self._current, self._recent, self._pending)
        self._current, self._recent, self._pending = self._streams.pop(
            stream, (None, deque(), deque(maxlen=PENDING_EVENTS))
        )
        self._stream = stream

    # ---- lines ----------------------------------------------------------------------

    def header(self, event: ev.OomInvoked, seq: int) -> None:
        """`X invoked oom-killer`: a report begins."""
        self.close_current()
        self._open(event, header=event, seq=seq)

    def body(self, event: ev.Event, seq: int) -> None:
        """A report line other than its header, kill and reap (STRONG or BODY)."""
        draft = self._current
        if isinstance(event, ev.OomKillSummary) and draft is not None and _summary_after_kill(draft, event):
            draft.add(event, seq)
            return
        if isinstance(event, ev.ZoneLine) and draft is not None and _zone_after_kill(draft, event):
            draft.add(event, seq)
            return
        if draft is not None and (draft.kill is not None or draft.source != event.record.source):
            draft = None
        if draft is not None:
            gap = seconds(draft.last_stamp, event.record.stamp)
            if gap is not None and gap > REPORT_GAP_S:
                self.close_current()
                draft = None
        if draft is None:
            if isinstance(event, STRONG):
                self.close_current()
                draft = self._open(event, header=None, seq=seq)
            else:
                self._pending.append(event)
                return
        if isinstance(event, ev.KillChosen):
            if draft.chosen is not None:
                self.close_current()
                draft = self._open(event, header=None, seq=seq)
            draft.chosen = event
        draft.add(event, seq)

    def killed(self, event: ev.Killed, seq: int) -> None:
        draft = self._current
        if draft is None or draft.kill is not None or draft.source != event.record.source:
            self.close_current()
            draft = self._open(event, header=None, seq=seq)
        else:
            gap = seconds(draft.last_stamp, event.record.stamp)
            if gap is not None and gap > REPORT_GAP_S:
                self.close_current()
                draft = self._open(event, header=None, seq=seq)
        draft.add(event, seq)
        draft.kill = event
        draft.kill_seq = seq

    def no_kill(self, event: ev.NoKillable | ev.OomPanic, seq: int) -> None:
        """A report's end that kills nobody: no killable task, or a panic."""
        draft = self._current or self._open(event, header=None, seq=seq)
        draft.add(event, seq)

    def reaped(self, event: ev.Reaped, seq: int) -> None:
        candidates = [self._current] if self._current else []
        candidates += reversed(self._recent)
        for draft in candidates:
            if draft is not None and draft.kill is not None and draft.kill.pid == event.pid:
                if draft.reap is None:
                    draft.reap = (event, seq)
                    draft.add(event, seq)
                return

    def lost(self, count: int) -> None:
        """`N callbacks suppressed`: reports the log lost, told by the next report."""
        self._suppressed += count

    def not_a_report(self) -> None:
        """A page allocation failure's own Mem-Info dump follows: not part of any OOM report."""
        self._pending.clear()

    # ---- reports --------------------------------------------------------------------

    def _open(self, event: ev.Event, header: ev.OomInvoked | None, seq: int) -> Draft:
        record = event.record
        draft = Draft(
            seq=seq,
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
                gap = seconds(earlier.record.stamp, record.stamp)
                if gap is not None and abs(gap) > REPORT_GAP_S:
                    continue
                if earlier.record.source == record.source:
                    if not draft.events:
                        draft.first_stamp = earlier.record.stamp
                        draft.first_line = earlier.record.line_no
                    draft.add(earlier, seq)
            draft.suppressed = self._suppressed
        else:
            draft.add(header, seq)
        self._pending.clear()
        self._suppressed = 0
        self._current = draft
        return draft

    def close_current(self) -> None:
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
                self._closed(self._recent.popleft())

    def finish(self) -> None:
        """Close every stream's reports and hand them all on."""
        for stream in [*self._streams, self._stream]:
            if stream is not None:
                self.switch(stream)
                self.close_current()
                while self._recent:
                    self._closed(self._recent.popleft())


def _header_quoted_after_kill(kill_draft: Draft, header_draft: Draft) -> bool:
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
    gap = seconds(kill_draft.last_stamp, header.record.stamp)
    return gap is not None and abs(gap) <= 1.0


def _zone_after_kill(draft: Draft, zone: ev.ZoneLine) -> bool:
    """Is this zone line quoted after a lone kill part of its report? A write-up may quote the
    kill, its `oom-kill:` summary, then `Node 0 Normal free:29852kB ... active_file:32kB` (seed
    002). It is when the kill line (and its summary quoted after it) is all the report holds, the
    zone line is the next line, at the same second. A kill with a body of its own is complete:
    body lines after it are the next report's, whose header was cut."""
    kill = draft.kill
    record = zone.record
    if kill is None or draft.header is not None or draft.source != record.source:
        return False
    if record.line_no - draft.last_line != 1 or not draft.events or draft.events[0] is not kill:
        return False
    if not all(isinstance(e, (ev.Killed, ev.OomKillSummary, ev.ZoneLine)) for e in draft.events):
        return False
    gap = seconds(draft.last_stamp, record.stamp)
    return gap is None or abs(gap) <= 1.0


def _summary_after_kill(draft: Draft, summary: ev.OomKillSummary) -> bool:
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
    gap = seconds(draft.last_stamp, record.stamp)
    if gap is not None and abs(gap) > 1.0:
        return False
    pid, task = summary.fields.get("pid", "").strip(), summary.fields.get("task", "").strip()
    if pid and (kill.pid is None or pid != str(kill.pid)):
        return False
    return not task or task == kill.comm
