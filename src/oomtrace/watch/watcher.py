"""The watcher's state: records and samples in, notices out. No I/O of its own (loop.py reads
and the sinks write), so a test can drive it with records and samples it makes."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from oomtrace import events as ev
from oomtrace.analyze import analyze
from oomtrace.explain import warning_summary
from oomtrace.formats.json import story_json
from oomtrace.frozen import Frozen, replace
from oomtrace.messages import WARNING_LABELS
from oomtrace.model import SAMPLES_BEFORE_S, Analysis, Episode, ProbeSample
from oomtrace.parse import parse_record
from oomtrace.prefilter import Prefilter
from oomtrace.records import Record, Stamp
from oomtrace.story import tell, victim_name
from oomtrace.storyfacts import doubt_words
from oomtrace.storyview import WhyView, story_view, why_view
from oomtrace.units import duration, iso_time, kib
from oomtrace.verdict import judge
from oomtrace.watch.follow import Batch
from oomtrace.watch.notice import Notice
from oomtrace.watch.probes import CGROUP_EVENTS, CgroupCounters, Memory, Pressure, Slope
from oomtrace.watch.rises import FOLD_S, Rise, Told, rise_text, told_in
from oomtrace.watch.storybuffer import BUFFER_MAX, BufferSource, Hold, StoryBuffer, is_body_line
from oomtrace.watch.thresholds import Thresholds

# After a kill line, the story waits this long for the rest of the report (the reaper's line).
SETTLE_S = 0.3
# Each kill line moves the settle on, but never past this long after the first kill not yet
# told: a loop of kills 0.25 s apart is told as it goes, not when it stops.
SETTLE_MAX_S = 2.0
# Kills waiting in the buffer are told once this many have come, settled or not: a story is
# made from the buffer's records, and a burst of thousands of kills would otherwise be more
# than one analysis keeps whole (episodes.KEPT_LAST).
UNTOLD_MAX = 200
# A warning from the log is said to have cleared once not seen again for this long. Silence is
# weak evidence (the driver stops repeating; memory stays short: seed 000's kill came 3 minutes
# after its last NV_ERR_NO_MEMORY), so the wait is long.
QUIET_S = 600.0
# Kills told, remembered so the next story of the same buffer does not tell them again.
TOLD_MAX = 4096
# Kills told lately that the cursor file keeps (a restart's catch-up is at most a few hundred).
TOLD_SAVED = 1024
# The samples a live story draws (the half hour before its kill, one a second), with room for
# the extra samples a PSI trigger's wake-ups take.
SAMPLES_MAX = 2 * int(SAMPLES_BEFORE_S)
# A report begun (`invoked oom-killer`) whose kill line has not come in this long never will:
# the cursor stops waiting for it.
OPEN_REPORT_S = 30.0
# What each kind of warning means, for whoever reads it at 3 a.m.
MEANINGS = {
    "psi-some": "tasks are stalling on memory: reclaim is working hard, an OOM kill may follow",
    "psi-full": "every task is stalled on memory at times: the machine is thrashing",
    "cgroup-psi": "its tasks are stalling on memory at its limit: an OOM kill in it may follow",
    "memavail": "memory the kernel can still hand out is nearly gone",
    "zero-in": "MemAvailable is falling fast enough to run out within seconds",
    "nvrm-no-memory": "the GPU driver could not allocate memory: on unified memory, the same RAM "
    "the kernel is about to run out of",
    "nvrm-xid": "the GPU reported an error (Xid)",
    "page-allocation-failure": "the kernel could not satisfy an allocation: memory is short or fragmented",
    "journald-memory-pressure": "journald saw memory pressure and flushed its caches",
    "hung-task": "a task has been blocked for minutes (often reclaim or I/O under memory pressure)",
}


@dataclass
class _Active:
    first: float
    said: float
    last: float
    since_said: int = 0
    total: int = 1


class Sample(Frozen):
    """One round of the watcher's own probes."""

    now: float
    """time.monotonic() when taken."""
    wall: datetime
    pressure: Pressure | None
    memory: Memory | None
    cgroups: tuple[CgroupCounters, ...] = ()


class Watcher:
    """Records and samples in, notices out. Over 250 lines because the settle, the holds on the
    cursor, the warnings said or counted and the kills told are one state that each record and
    sample changes together; the pieces with a job of their own are apart (storybuffer.py keeps
    the records, rises.py matches a cgroup counter to a kill)."""

    def __init__(
        self,
        thresholds: Thresholds,
        zone: tzinfo,
        source_name: str,
        emit: Callable[[Notice], None],
        boot_id: str | None = None,
        started: datetime | None = None,
        told_before: Iterable[tuple[str | None, int | None, str, str]] = (),
    ) -> None:
        self.thresholds = thresholds
        self.zone = zone
        self.source_name = source_name
        self.emit = emit
        self.boot_id = boot_id
        self.started = started
        self._story = StoryBuffer()
        self._untold = 0
        """Kill lines read since the last story was told."""
        self._settle_deadline: float | None = None
        # What the probes saw, warning or not: a live story draws its half hour before the kill
        # (a --record file keeps samples only while a warning is active).
        self._samples: deque[ProbeSample] = deque(maxlen=SAMPLES_MAX)
        self._prefilter = Prefilter()
        self._active: dict[str, _Active] = {}
        self._due: float | None = None
        self._told: OrderedDict[tuple[str | None, int | None, str, str], None] = OrderedDict()
        self._told_before = frozenset(told_before)
        """Kills the last run told (saved with its cursor): told again, they are repeats."""
        self.before_telling: Callable[[], None] | None = None
        """Called with told_keys updated, before the notices of a batch of kills are emitted."""
        self.told_keys: deque[tuple[str | None, int | None, str, str]] = deque(
            self._told_before, maxlen=TOLD_SAVED
        )
        """The kills told lately, newest last, for the cursor file (read_told)."""
        self._slope = Slope()
        self._cgroups: dict[str, dict[str, int]] = {}
        self._line = 0
        self.kills = 0
        self._cursor: str | None = None
        self._hold: Hold | None = None
        self._open: Hold | None = None
        self._recent: deque[Told] = deque(maxlen=16)
        self._rises: list[Rise] = []

    @property
    def cursor(self) -> str | None:
        """Where a restart may resume: past every record read, except those of a kill not yet told."""
        hold = self._hold or self._open
        return hold.cursor if hold is not None else self._cursor

    def status(self) -> str:
        """How it stands, for SIGUSR1."""
        active = ", ".join(sorted(self._active)) or "none"
        pending = "; a kill is being told" if self._due is not None else ""
        return f"{self.kills:,} kill(s) told since start; warnings active: {active}{pending}"

    # ---- the log ---------------------------------------------------------------------------

    def feed(self, batch: Batch, now: float, wall: datetime) -> None:
        if batch.lost:
            # -1: the source cannot count them, nor say that any were lost at all.
            count = f"{batch.lost:,} records lost" if batch.lost > 0 else "records may have been lost"
            self.emit(Notice("gap", "lost", wall, f"{count}: {batch.lost_why}", data={"lost": batch.lost}))
        befores = batch.cursors_before
        for index, record in enumerate(batch.records):
            self._line = max(self._line, record.line_no)
            if record.is_kernel and not self._prefilter.wants(record.message):
                continue  # noise: no event, nothing kept (a follower may have dropped it already)
            before = (befores[index] if index < len(befores) else None) or self._cursor
            event = parse_record(record)
            kill = _is_kill(event)
            if kill and self._untold >= UNTOLD_MAX:
                self._tell(now, wall)  # before this kill: the ones waiting are a story's worth
            position = self._story.appended
            self._keep(record, event, now, wall, essential=kill or not is_body_line(event))
            if isinstance(event, ev.EarlyWarning):
                if self.thresholds.kernel and event.kind != "lost-messages":
                    self._kernel_warning(event, now, wall)
            elif isinstance(event, ev.OomInvoked):
                self._open = self._open or Hold(before, now, position)
            elif kill:
                self._hold = self._hold or self._open or Hold(before, now, position)
                self._open = None
                self._untold += 1
                if self._settle_deadline is None:
                    self._settle_deadline = now + SETTLE_MAX_S
                self._due = min(now + SETTLE_S, self._settle_deadline)
        self._cursor = batch.cursor or self._cursor

    def _keep(
        self,
        record: Record,
        event: ev.Event | None,
        now: float,
        wall: datetime,
        *,
        essential: bool = True,
    ) -> None:
        """Into the story's buffer (StoryBuffer.keep says what it folds and drops). A full
        buffer lets go of its oldest records, never of a story not yet told: its kills are told
        first, and only one report still without its kill line may grow past it."""
        if not self._story.keep(record, event, self._story_start(), essential=essential):
            return
        if len(self._story.records) > BUFFER_MAX:
            self._make_room(now, wall)
        if not len(self._story.records) % 1024:
            self._story.forget_old(self._story_start())

    def _story_start(self) -> int | None:
        """The buffer position of the first record a story not yet told needs."""
        hold = self._hold or self._open
        return hold.first if hold is not None else None

    def _make_room(self, now: float, wall: datetime) -> None:
        """Drop the oldest records down to BUFFER_MAX; where one belongs to a story not yet
        told, its kills are told first (settled or not: a late reaper line is the price)."""
        start = self._story_start()
        if start is not None and self._story.oldest >= start and self._hold is not None:
            self._tell(now, wall)
            start = self._story_start()
        self._story.drop_oldest(start)

    def _kernel_warning(self, event: ev.EarlyWarning, now: float, wall: datetime) -> None:
        if self._counted(event.kind, now):
            return  # a driver's chatter, thousands a minute: counted before any words are made
        record = event.record
        summary = warning_summary(event.kind, event.key, event.text)
        meaning = MEANINGS.get(event.kind) or WARNING_LABELS.get(event.kind, "")
        self._warn(event.kind, summary, meaning, now, wall, lines=(_line_json(record),))

    # ---- the probes ------------------------------------------------------------------------

    def sample(self, sample: Sample) -> None:
        limits = self.thresholds
        wall, now = sample.wall, sample.now
        if sample.pressure is not None:
            for kind, value, limit in (
                ("psi-some", sample.pressure.some_avg10, limits.psi_some),
                ("psi-full", sample.pressure.full_avg10, limits.psi_full),
            ):
                what = kind.removeprefix("psi-")
                text = f"memory pressure {what} avg10 {value:.1f}% (warn at {limit}%)"
                self._level(kind, value, limit, above=True, text=text, now=now, wall=wall)
        if sample.memory is not None:
            memory = sample.memory
            self._hold_sample(sample, memory)
            self._slope.add(now, memory.available_kb)
            floor = limits.memavail_floor_kb(memory.total_kb)
            text = (
                f"MemAvailable {kib(memory.available_kb)} of {kib(memory.total_kb)} (warn under {kib(floor)})"
            )
            self._level("memavail", memory.available_kb, floor, above=False, text=text, now=now, wall=wall)
            zero = self._slope.zero_in_s()
            rate = self._slope.kb_per_s()
            # Its own words when not falling (its clearance used to quote the memavail line).
            text = f"MemAvailable {kib(memory.available_kb)}, not falling towards zero"
            if zero is not None and rate is not None:
                text = (
                    f"MemAvailable {kib(memory.available_kb)}, falling {kib(int(-rate))}/s: "
                    f"zero in {duration(zero)} (warn under {duration(limits.zero_in_s or 0)})"
                )
            self._level("zero-in", zero, limits.zero_in_s, above=False, text=text, now=now, wall=wall)
        for counters in sample.cgroups:
            self._cgroup(counters, now, wall)
        self.tick(now, wall)
        if self._active and sample.memory is not None:
            figures: dict[str, Any] = {
                "memavailable_kb": sample.memory.available_kb,
                "memtotal_kb": sample.memory.total_kb,
            }
            if sample.pressure is not None:
                figures["psi_some_avg10"] = sample.pressure.some_avg10
                figures["psi_full_avg10"] = sample.pressure.full_avg10
            self.emit(Notice("sample", "probes", wall, "while warnings are active", data=figures))

    def _hold_sample(self, sample: Sample, memory: Memory) -> None:
        pressure = sample.pressure
        some, full = (pressure.some_avg10, pressure.full_avg10) if pressure is not None else (None, None)
        self._samples.append(ProbeSample(sample.wall, memory.available_kb, some, full, None, live=True))
        horizon = sample.wall.timestamp() - SAMPLES_BEFORE_S
        while self._samples[0].time.timestamp() < horizon:
            self._samples.popleft()

    def _level(
        self,
        kind: str,
        value: float | None,
        limit: float | None,
        *,
        above: bool,
        text: str,
        now: float,
        wall: datetime,
    ) -> None:
        """A sampled figure: warn while past its limit; clear once back by a margin (so a
        figure hovering at the limit does not flap)."""
        if limit is None:
            return
        past = value is not None and (value >= limit if above else value <= limit)
        if past:
            self._warn(
                kind, text, MEANINGS[kind], now, wall, record=True, data={"value": value, "limit": limit}
            )
            return
        back = value is None or (value < limit * 0.8 if above else value > limit * 1.2)
        if kind in self._active and back:
            self._clear(kind, wall, f"{kind}: back within its limit ({text})")

    def _cgroup(self, counters: CgroupCounters, now: float, wall: datetime) -> None:
        before = self._cgroups.get(counters.path)
        self._cgroups[counters.path] = counters.counts
        name = counters.path.rsplit("/", 1)[-1]
        limit = self.thresholds.psi_some
        if counters.pressure is not None and limit is not None:
            value = counters.pressure.some_avg10
            text = f"{name}: memory pressure some avg10 {value:.1f}% (warn at {limit}%)"
            self._level(f"cgroup-psi:{name}", value, limit, above=True, text=text, now=now, wall=wall)
        if before is None:
            return
        for event in CGROUP_EVENTS:
            rise = counters.counts.get(event, 0) - before.get(event, 0)
            if rise > 0:
                self._rises.append(Rise(now, wall, counters.path, event, rise, counters.counts[event]))
        self._say_rises(now)

    def _say_rises(self, now: float, *, final: bool = False) -> None:
        """Each cgroup counter's rise: as part of a kill just told in that cgroup, or as a warning
        of its own. While a kill is settling, or an oom/oom_kill rise waits for its kill line,
        it is held, so that it does not come before the story and then repeat it."""
        waiting = []
        for rise in self._rises:
            told = told_in(self._recent, rise.path, rise.at)
            if told is not None:
                self._same_kill(rise, told)
            elif not final and (
                self._due is not None or (rise.event in ("oom", "oom_kill") and now - rise.at < FOLD_S)
            ):
                waiting.append(rise)
            else:
                self._rise_warning(rise)
        self._rises = waiting

    def _rise_warning(self, rise: Rise) -> None:
        data = {"cgroup": rise.path, "counter": rise.event, "rise": rise.rise}
        meaning = CGROUP_EVENTS[rise.event]
        self._warn(
            f"cgroup-{rise.event}", rise_text(rise), meaning, rise.at, rise.wall, record=True, data=data
        )

    def _same_kill(self, rise: Rise, told: Told) -> None:
        """Said as part of the kill told above, kept out of the warnings later stories use."""
        who = f"{told.victim} (pid {told.pid})" if told.pid is not None else told.victim
        text = f"{rise_text(rise)}: the kill of {who} told above"
        data = {
            "cgroup": rise.path,
            "counter": rise.event,
            "rise": rise.rise,
            "same_kill": {"victim": told.victim, "pid": told.pid},
        }
        self.emit(Notice("warning", f"cgroup-{rise.event}", rise.wall, text, data=data))

    # ---- saying it ---------------------------------------------------------------------------

    def _warn(
        self,
        kind: str,
        text: str,
        meaning: str,
        now: float,
        wall: datetime,
        *,
        record: bool = False,
        data: dict[str, Any] | None = None,
        lines: tuple[dict[str, Any], ...] = (),
    ) -> None:
        """Say a warning, or count it when its kind was said less than `repeat_s` ago."""
        if self._counted(kind, now):
            return
        active = self._active.get(kind)
        if active is not None:
            active.last = now
            active.total += 1
            repeats = active.since_said
            active.said, active.since_said = now, 0
            text += f" (still; {repeats:,} more since it was last said)" if repeats else " (still)"
        else:
            self._active[kind] = _Active(now, now, now)
        notice_lines = lines
        if record:
            # The watcher's own finding goes into the story's record as a line of its own.
            own = Record(
                self.source_name, self._line, text, f"warning {kind}: {text}", _stamp(wall), "oomtrace-watch"
            )
            self._keep(own, None, now, wall)
            notice_lines = (_line_json(own),)
        self.emit(Notice("warning", kind, wall, text, meaning, dict(data or {}), notice_lines))

    def _counted(self, kind: str, now: float) -> bool:
        """Is this warning's kind active and said less than `repeat_s` ago? Then it is counted
        (and said with the count later), not said."""
        active = self._active.get(kind)
        if active is None or now - active.said >= self.thresholds.repeat_s:
            return False
        active.last = now
        active.total += 1
        active.since_said += 1
        return True

    def _clear(self, kind: str, wall: datetime, text: str) -> None:
        active = self._active.pop(kind)
        data = {"warnings": active.total, "lasted_s": round(active.last - active.first, 1)}
        self.emit(Notice("clear", kind, wall, f"{text}; seen {active.total:,} time(s)", data=data))

    # ---- kills -------------------------------------------------------------------------------

    def next_wake(self, now: float) -> float:
        """Seconds until the watcher has something to do without input (a story to tell)."""
        return max(0.0, self._due - now) if self._due is not None else 1.0

    def tick(self, now: float, wall: datetime) -> None:
        for kind in [k for k, a in self._active.items() if not _sampled(k) and now - a.last > QUIET_S]:
            self._clear(kind, wall, f"{kind}: not seen for {duration(QUIET_S)}")
        if self._due is not None and now >= self._due:
            self._due = None
            self._tell(now, wall)
        if self._open is not None and now - self._open.since > OPEN_REPORT_S:
            self._open = None
        if self._rises:
            self._say_rises(now)

    def flush(self, now: float, wall: datetime) -> None:
        """Tell a kill still settling, and say the counters held for it (the watcher is stopping)."""
        if self._due is not None:
            self._due = None
            self._tell(now, wall)
        self._say_rises(now, final=True)

    def _tell(self, now: float, wall: datetime) -> None:
        self._due = self._settle_deadline = None
        self._untold = 0
        # The hour before the newest record is what a story can use (a kill read while catching
        # up after a restart is as old as its records, not as the clock).
        self._story.forget_old(self._story_start())
        records = self._story.before(self._open)
        analysis = analyze([BufferSource(self.source_name, records, tuple(self._samples))])
        notices = []
        for episode in analysis.episodes:
            key = self._key(episode)
            if key in self._told:
                continue
            self._told[key] = None
            if len(self._told) > TOLD_MAX:
                self._told.popitem(last=False)
            if not episode.proven:
                # A record anyone could have written (`logger -t earlyoom`): said, as a claim, and
                # no kill for the hooks, the metrics or the count.
                notices.append(self._claim_notice(episode, wall))
                continue
            repeat = key in self._told_before
            self.kills += not repeat
            notices.append(replace(self._kill_notice(analysis, episode, wall, repeat), key=key))
            if not repeat:
                self.told_keys.append(key)
            cgroups = tuple(c for c in (episode.memcg, episode.task_memcg) if c and c != "/")
            name = episode.victim.comm if episode.victim else victim_name(episode)
            self._recent.append(Told(now, cgroups, name, key[1]))
        if notices and self.before_telling is not None:
            # The kills are saved as told (with the cursor still before them) before a word of
            # their stories is written: a `kill -9` once a story is out cannot make the next run
            # tell it as new and run its hooks again. It costs one fsync a batch of kills.
            self.before_telling()
        for notice in notices:
            self.emit(notice)
        # Told (and so written everywhere): the cursor may pass the kill, up to a report begun since.
        self._hold = self._open

    def _key(self, episode: Episode) -> tuple[str | None, int | None, str, str]:
        """(boot, pid, victim, time): the same kill read again is not a new kill."""
        victim = episode.victim
        # In UTC: a restart with another --tz (saved keys, read_told) names the same instant alike.
        moment = episode.moment.time
        time = moment.astimezone(UTC).isoformat(timespec="seconds") if moment else ""
        return (self.boot_id, victim.pid if victim else None, victim_name(episode), time)

    def _claim_notice(self, episode: Episode, wall: datetime) -> Notice:
        victim = episode.victim
        name = f"{victim.comm} (pid {victim.pid})" if victim else str(episode.unit)
        text = f"{name} was killed by {episode.killer}, says a record {doubt_words(episode)}"
        meaning = "not counted as a kill: no hook, no metric"
        data = {"killer": episode.killer, "doubt": episode.doubt, "victim": victim.comm if victim else None}
        return Notice("claim", episode.killer, episode.moment.time or wall, text, meaning, data)

    def _kill_notice(self, analysis: Analysis, episode: Episode, wall: datetime, repeat: bool) -> Notice:
        name = episode.victim.comm if episode.victim else str(episode.unit)
        story = tell(analysis, episode, name)
        verdict = judge(analysis, name, episode, [])
        words = story_view(story)
        late = bool(self.started and episode.moment.time and episode.moment.time < self.started)
        text = words.who + words.what + (" (while the watcher was not running)" if late else "")
        if repeat:
            text += " (a repeat: told before the watcher last stopped, before its cursor was saved)"
        first, last = episode.lines
        lines = tuple(_line_json(r) for r in self._story.records if first <= r.line_no <= last)
        data: dict[str, Any] = {
            # `time` is when the kill happened (a log shipper takes it as the record's time); when
            # the watcher told it (0.3 s later, or hours later after a restart) is said apart.
            "told": iso_time(wall),
            "late": late,
            # Told by the run before this one, which was stopped before it saved its cursor past
            # the kill: no hook runs for it again and no metric counts it again.
            "repeat": repeat,
            "lead_time_s": story.lead_time_s,
            "boot": self.boot_id,
            "story": story_json(story),
        }
        view: WhyView = why_view(analysis, [story], verdict)
        happened = episode.moment.time or wall
        return Notice("kill", story.cause, happened, text, data=data, lines=lines, view=view)


def _sampled(kind: str) -> bool:
    """Sampled warnings clear by their figure, not by silence."""
    return kind in ("psi-some", "psi-full", "memavail", "zero-in") or kind.startswith("cgroup-psi:")


def _is_kill(event: ev.Event | None) -> bool:
    """A kill line (kernel or userspace killer), a panic, or systemd's record of an OOM kill."""
    if isinstance(event, ev.UnitRecord):
        return event.kind == "oom-kill"
    return isinstance(event, (ev.Killed, ev.UserspaceKill, ev.OomPanic))


def _stamp(wall: datetime) -> Stamp:
    return Stamp(wall, None, wall.isoformat())


def _line_json(record: Record) -> dict[str, Any]:
    return {
        "time": record.stamp.wall.isoformat() if record.stamp.wall else None,
        "uptime_s": record.stamp.uptime,
        "ident": record.ident,
        "host": record.host,
        "message": record.message,
    }
