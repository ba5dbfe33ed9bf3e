"""Records and their events → an Analysis: the builder feeds each stage and keeps what a long log may keep.

The stages, each a module: assemble.py groups report lines into drafts, freeze.py makes an
Episode of each closed draft, runs.py collects warning runs, ledger.py counts the sources,
elide.py counts the kills not kept, and incidents.py groups the kept kills into shortages.
The builder only routes each event to its stage and bounds what is kept; it decides no rule
of assembly itself.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from datetime import datetime, timedelta

from oomtrace import events as ev
from oomtrace.episodes.assemble import BODY, STRONG, ReportAssembler, Stream
from oomtrace.episodes.containers import ContainerStatuses
from oomtrace.episodes.decisions import KillDecisions
from oomtrace.episodes.draft import Draft
from oomtrace.episodes.elide import Deferred, Elision, outline_of, thawed
from oomtrace.episodes.freeze import Freezer
from oomtrace.episodes.incidents import Bridge, incidents_of
from oomtrace.episodes.ledger import SourceLedger
from oomtrace.episodes.moments import moment_of
from oomtrace.episodes.recent import RecentLines
from oomtrace.episodes.runs import WarningRuns
from oomtrace.frozen import replace
from oomtrace.keep import FirstAndLast
from oomtrace.messages.runtime import CONTEXT_LINES, FINISHED_LINES
from oomtrace.messages.units import STATUS_LINES, status_unit
from oomtrace.model import Analysis, Crash, Episode, UnitNote
from oomtrace.records import Record
from oomtrace.services import join_units, join_witnesses, since_moment, unit_of, userspace_episode

# A log of more kills than this keeps the first KEPT_FIRST and the last KEPT_LAST whole, and
# counts the ones between (model.Elided): a crash loop of 200,000 kills fits in ~100 MB.
KEPT_FIRST = 1000
KEPT_LAST = 1000
# Warning runs, unit records and crashes: kept the same way, these many first and last.
KEPT_RECORDS = 2000
# With --since/--until, kills further than this outside the range are dropped as they are read
# (the exact cut, which keeps whole incidents, comes after: select.between).
RANGE_MARGIN_S = 3600.0
# How many recent kills are remembered to recognise one read again from a second source.
SEEN_KILLS = 4096
# How far (in records) a userspace killer's act may follow the line naming its victim.
NAMED_VICTIM_LINES = 50
# A closed report past the first KEPT_FIRST is kept as its draft (and frozen only if it is
# still among the last KEPT_LAST at the end) when it holds at most this many events: a crash
# loop's middle kills are counted, never shown, and freezing each was a tenth of `list`. A
# bigger report is frozen at once, so that the drafts held stay small (1,000 of them: a crash
# loop of 75-line reports whose every figure differs peaks at 175 MB instead of 153).
DEFER_EVENTS = 120
# The lines feed() hands to the assembler's body, as it tests them: those of no kind it tests before.
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
    ev.Repeats,
    ev.NoKillable,
    ev.OomPanic,
    ev.ContainerFinished,
    ev.ProcessDied,
    ev.KillFailed,
)
_REPORT_LINES = frozenset(t for t in (*STRONG, *BODY) if not issubclass(t, _FED_BEFORE))
_OOM_WORDS = ("invoked oom-killer", "Killed process", "oom-kill:", "ill process")


class EpisodeBuilder:
    """Feed it every record (with its parsed event, if any) in input order; then `finish()`."""

    def __init__(self, since: datetime | None = None, until: datetime | None = None) -> None:
        self._seq = 0
        self._assembler = ReportAssembler(self._report_closed)
        self._body = self._assembler.body
        self._stream: Stream | None = None
        """The stream the assembler has loaded (checked here on every record, not called)."""
        self._ledger = SourceLedger()
        self._note_span = self._ledger.note
        self._elided = Elision()
        self._frozen: FirstAndLast[Episode | Deferred] = FirstAndLast(
            KEPT_FIRST, KEPT_LAST, lambda kept: self._elided.add(outline_of(kept))
        )
        """Finished kills (kernel reports without their events, userspace kills), in input order;
        a report that may yet be elided is kept unfrozen (Deferred)."""
        self._since = since - timedelta(seconds=RANGE_MARGIN_S) if since is not None else None
        self._until = until + timedelta(seconds=RANGE_MARGIN_S) if until is not None else None
        self._outside = 0
        self._seen: OrderedDict[tuple[str | None, int, str, int], str] = OrderedDict()
        """Recent kills by (host, pid, victim, second) → the source they were read from."""
        self._read_twice = 0
        self._runs = WarningRuns(KEPT_RECORDS)
        self._crashes: FirstAndLast[tuple[ev.ProcessCrash, int]] = FirstAndLast(KEPT_RECORDS, KEPT_RECORDS)
        self._unit_records: FirstAndLast[tuple[ev.UnitRecord, int]] = FirstAndLast(KEPT_RECORDS, KEPT_RECORDS)
        self._named: dict[tuple[str | None, str], tuple[ev.VictimNamed, int]] = {}
        """The process a userspace killer last named, per (host, source), awaiting its act."""
        self._deaths: FirstAndLast[tuple[ev.ProcessDied, int]] = FirstAndLast(KEPT_RECORDS, KEPT_RECORDS)
        self._recent = RecentLines(max(CONTEXT_LINES + FINISHED_LINES, STATUS_LINES))
        self._decisions = KillDecisions(self._userspace_kill)
        self._containers = ContainerStatuses(self._decisions.kill, self._recent)

    # ---- input -------------------------------------------------------------------

    def begin_source(self, name: str, kind: str, boot_time: datetime | None = None) -> None:
        """Start reading a source; `boot_time` converts its uptimes to wall time."""
        self._release_held()
        self._assembler.close_current()
        self._ledger.begin(name, kind, boot_time)

    def set_record_count(self, source: str, count: int) -> None:
        """The number of lines a prefiltered source holds (it fed only those that matter)."""
        self._ledger.set_record_count(source, count)

    def set_problem(self, source: str, problem: str) -> None:
        """Why a source was not read to its end: the summary says so."""
        self._ledger.set_problem(source, problem)

    def set_host_spans(self, spans: Mapping[str, tuple[datetime, datetime]]) -> None:
        """The span of each host as its source knows it (a journal reader that fed only the
        records that matter seeks each host's first and last entry)."""
        self._ledger.set_host_spans(spans)

    def set_host_damage(self, damage: Mapping[str, tuple[str, datetime | None]]) -> None:
        """Hosts whose journal file a damaged entry cut short: the file, and the time read up to."""
        self._ledger.set_host_damage(damage)

    def feed(self, record: Record, event: ev.Event | None) -> None:
        seq = self._seq = self._seq + 1  # a local: read on every record, and cheaper so
        self._recent.saw(record)
        self._containers.saw(record)
        self._decisions.saw(record)
        info = self._note_span(record, seq)
        # A text log is one stream (a line naming no host, a continuation, is the last one's);
        # a journal or an export interleaves its hosts' entries: one stream each.
        stream = (record.host if record.separate else None, record.source)
        if stream != self._stream:
            self._assembler.switch(stream)
            self._stream = stream
        if event is not None:
            info.events += 1
        if event is None:
            if record.is_kernel and any(word in record.message for word in _OOM_WORDS):
                self._ledger.note_unparsed(record)
            return
        if type(event) in _REPORT_LINES:  # most events; _FED_BEFORE names the kinds tested below
            self._body(event, seq)
            return
        if isinstance(event, ev.EarlyWarning):
            self._warning(event)
            if event.kind == "page-allocation-failure":
                self._assembler.not_a_report()
        elif isinstance(event, ev.OomInvoked):
            self._assembler.header(event, seq)
        elif isinstance(event, ev.Killed):
            self._assembler.killed(event, seq)
            self._runs.killed(record.host, seq)
        elif isinstance(event, ev.Reaped):
            self._assembler.reaped(event, seq)
        elif isinstance(event, ev.ProcessCrash):
            self._crashes.append((event, seq))
        elif isinstance(event, ev.VictimNamed):
            self._named[(record.host, record.source)] = (event, seq)
        elif isinstance(event, ev.UserspaceKill):
            self._containers.kill(event, seq)
        elif isinstance(event, ev.ContainerFinished):
            self._containers.finished(event)
        elif isinstance(event, ev.KillFailed):
            self._decisions.failed(event)
        elif isinstance(event, ev.ProcessDied):
            self._deaths.append((event, seq))
        elif isinstance(event, ev.UnitRecord):
            if event.since is not None and event.unit is None:
                event = replace(event, unit=status_unit(self._recent.before(record, STATUS_LINES)))
            self._unit_records.append((event, seq))
        elif isinstance(event, ev.CallbacksSuppressed):
            self._assembler.lost(event.count)
            # Rate-limited reports are records the log lost.
            self._warning(
                ev.EarlyWarning(event.record, "lost-messages", event.record.message.strip(), "ratelimit")
            )
        elif isinstance(event, ev.Repeats):
            self._runs.repeated(event, seq)
        elif isinstance(event, (ev.NoKillable, ev.OomPanic)):
            self._assembler.no_kill(event, seq)
        elif isinstance(event, (*STRONG, *BODY)):
            self._body(event, seq)

    def _userspace_kill(self, event: ev.UserspaceKill, seq: int) -> None:
        event = self._with_named_victim(event)
        episode = userspace_episode(event, moment_of(event.record, seq))
        for _ in range(event.count):
            self._keep(episode)
        self._runs.killed(event.record.host, seq)

    def _warning(self, event: ev.EarlyWarning) -> None:
        watch_record = self._ledger.kind(event.record.source) == "watch-record"
        self._runs.add(event, self._seq, watch_record)

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

    # ---- keeping kills ------------------------------------------------------------

    def _report_closed(self, draft: Draft) -> None:
        """A report past the reap window: frozen now, or kept as its draft while it may yet be
        elided (DEFER_EVENTS)."""
        if not draft.events:
            return
        freezer = Freezer(draft, self._ledger.resolve)
        if self._frozen.filling_first() or len(draft.events) > DEFER_EVENTS:
            self._keep(freezer.episode(0))
        else:
            self._keep(freezer.outline(), freezer)

    def _keep(self, episode: Episode, freezer: Freezer | None = None) -> None:
        """Keep a kill (unless outside the range or read twice); with `freezer`, `episode` is
        the report's outline and the freezer makes the whole episode if it is kept to the end."""
        time = self._ledger.resolve(episode.moment).time
        if time is not None and (
            (self._since is not None and time < self._since)
            or (self._until is not None and time > self._until)
        ):
            self._outside += 1
            return
        if self._already_kept(episode, time):
            self._read_twice += 1
            return
        self._frozen.append(episode if freezer is None else Deferred(episode, freezer))

    def _already_kept(self, episode: Episode, time: datetime | None) -> bool:
        """The same kill read twice: from a second source (kern.log and kern.log.1 overlapping, a
        syslog file beside the journal, a watcher's record beside the log it followed), or quoted
        again in one (an oomtrace report pasted below its log). One host's pid is one victim's
        in a second: a second kill of it is a copy."""
        victim = episode.victim
        if victim is None or victim.pid is None or time is None:
            return False
        second = int(time.timestamp())
        # Two sources stamp one line a little apart (journal time against uptime plus boot time).
        for near in (second - 1, second, second + 1):
            first = self._seen.get((episode.host, victim.pid, victim.comm, near))
            if first is not None:
                return True
        self._seen[(episode.host, victim.pid, victim.comm, second)] = episode.moment.source
        if len(self._seen) > SEEN_KILLS:
            self._seen.popitem(last=False)
        return False

    # ---- output -----------------------------------------------------------------

    def _release_held(self) -> None:
        """Kills held for a line that may yet complete or undo them, handed on as they are."""
        self._containers.release()
        self._decisions.release()

    def finish(self) -> Analysis:
        self._release_held()
        self._assembler.finish()
        # Boot times learnt after a report was frozen still give its uptimes a wall time.
        head = [self._resolved(thawed(e)) for e in self._frozen.head()]
        tail = [self._resolved(thawed(e)) for e in self._frozen.tail()]
        self._frozen = FirstAndLast(0, 0)
        resolve = self._ledger.resolve
        notes = [
            UnitNote(
                u.unit,
                u.kind,
                u.detail,
                u.count,
                u.peak_kb,
                u.record.message,
                since_moment(resolve(moment_of(u.record, seq)), u.since),
                u.record.host,
                u.record.sender,
                u.since,
            )
            for u, seq in self._unit_records
        ]
        deaths = [(d, resolve(moment_of(d.record, seq))) for d, seq in self._deaths]
        joined = join_units(join_witnesses(head + tail, deaths), notes)
        boundary = max((e.moment.seq for e in head), default=0)
        elided = (
            self._elided.summary(self._runs.dropped, resolve, KEPT_FIRST, KEPT_LAST)
            if self._elided.kills
            else None
        )
        if self._elided.kills:
            # Number around the kills not kept: a kill's number says how many came before it.
            episodes = _numbered([e for e in joined if e.moment.seq <= boundary])
            episodes += _numbered(
                [e for e in joined if e.moment.seq > boundary], start=len(episodes) + self._elided.kills + 1
            )
        else:
            episodes = _numbered(joined)
        warnings = self._runs.warnings(resolve)
        bridge = Bridge(boundary, elided) if elided is not None else None
        incidents = incidents_of(episodes, warnings, bridge)
        if elided is not None and bridge is not None:
            before = max((e for e in episodes if e.moment.seq <= boundary), key=_seq, default=None)
            after = min((e for e in episodes if e.moment.seq > boundary), key=_seq, default=None)
            bridged = before is not None and after is not None and bridge.joins(before, after)
            elided = replace(elided, incidents=self._elided.incidents_beside(before, after, bridged))
        sources = self._ledger.summaries()
        ledger = self._ledger
        return Analysis(
            episodes=tuple(episodes),
            warnings=tuple(warnings),
            incidents=tuple(incidents),
            sources=sources,
            unparsed=tuple(ledger.unparsed),
            unparsed_count=ledger.unparsed_count,
            hosts=ledger.hosts(),
            host_spans=ledger.host_spans(),
            crashes=tuple(
                Crash(e.comm, e.pid, e.text, resolve(moment_of(e.record, seq))) for e, seq in self._crashes
            ),
            outside_range=self._outside,
            read_twice=self._read_twice,
            warnings_read_twice=self._runs.read_twice,
            elided=elided,
        )

    def _resolved(self, episode: Episode) -> Episode:
        resolve = self._ledger.resolve
        reaped = episode.reaped
        if reaped is not None and reaped.moment.time is None:
            reaped = replace(reaped, moment=resolve(reaped.moment))
        return replace(
            episode,
            moment=resolve(episode.moment),
            began=resolve(episode.began),
            reaped=reaped,
            unit=episode.unit or unit_of(episode.task_memcg),
        )


def _numbered(episodes: list[Episode], start: int = 1) -> list[Episode]:
    """Input order, or time order when every episode has a wall time (merged sources), numbered."""
    if all(e.moment.time is not None for e in episodes):
        ordered = sorted(episodes, key=lambda e: (e.moment.time, e.moment.seq))
    else:
        ordered = sorted(episodes, key=lambda e: e.moment.seq)
    return [replace(e, id=number) for number, e in enumerate(ordered, start=start)]


def _seq(episode: Episode) -> int:
    return episode.moment.seq
