"""The finished picture the builder hands to explanations and formats: episodes, warnings, incidents."""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from functools import cached_property

from oomtrace.frozen import Frozen


class Moment(Frozen):
    """A point in a log: its time as far as known, and where it was read."""

    time: datetime | None
    """Wall clock with offset; filled from uptime when the boot time is known."""
    uptime_s: float | None
    raw: str
    """The stamp as printed."""
    source: str
    line: int
    boot: int
    seq: int
    """Arrival order across all input: the tie-breaker when times are unknown."""
    clock_s: float | None = None
    """Time of day from a stamp with no date (records.Stamp.clock): the log gives no date."""


class Trigger(Frozen):
    """The task that was allocating when memory ran out (it invoked the killer)."""

    comm: str
    pid: int | None
    uid: int | None
    gfp_mask: str | None
    """None where the header was cut before it, or for a userspace killer (the daemon)."""
    gfp_flags: str | None
    order: int | None
    oom_score_adj: int | None
    cpuset: str | None
    mems_allowed: str | None


# Victim.comm_from where a container runtime's record names only the container (docker's
# `container oom` event): the victim's own name and pid are not in the log.
CONTAINER_NAMED = "the container runtime's record (a container's name)"


class Victim(Frozen):
    comm: str
    pid: int | None
    """None where the log lost it (2.4's `VM: killing process NAME`, a pid deleted by hand)."""
    uid: int | None
    total_vm_kb: int | None
    anon_rss_kb: int | None
    file_rss_kb: int | None
    shmem_rss_kb: int | None
    pgtables_kb: int | None
    oom_score_adj: int | None
    oom_score_adj_from: str | None
    """"kill line" or "tasks table": older kernels print the adj only in the table."""
    rss_kb: int | None = None
    """Total resident set, where only that is known (earlyoom's VmRSS, lmkd)."""
    comm_from: str | None = None
    """Where the name came from when not the kill line ("tasks table", "oom-kill summary"):
    the kill line was cut inside the name, or is missing. CONTAINER_NAMED: `comm` is the name of
    the container the victim ran in, not a process name."""
    pid_from: str | None = None
    """Where the pid came from when not the kill line."""


class Chosen(Frozen):
    """Pre-5.0 `Kill process N (comm) score N or sacrifice child`: the task the kernel picked."""

    pid: int
    comm: str
    score: int


class Zone(Frozen):
    node: int
    zone: str
    values_kb: Mapping[str, int]


class MemcgCounter(Frozen):
    kind: str
    usage_kb: int
    limit_kb: int
    failcnt: int


class Frame(Frozen):
    function: str
    module: str | None
    reliable: bool


class Reap(Frozen):
    pid: int
    comm: str
    anon_rss_kb: int
    file_rss_kb: int
    shmem_rss_kb: int
    moment: Moment


class UnitNote(Frozen):
    """A systemd record about the victim's unit, joined to the kill it reports on."""

    unit: str | None
    kind: str
    detail: str
    count: int | None
    peak_kb: int | None
    text: str
    moment: Moment
    moment_host: str | None = None
    """The host that logged it (kills and records are joined within one host)."""
    sender: str | None = None
    """Who the journal says wrote it (records.Record.sender)."""
    since: str | None = None
    """For `systemctl status`'s `Active:` line, its `since` time as printed."""


class Witness(Frozen):
    """Another process's record of a kill, joined to it (Android ActivityManager's `Process X
    (pid N) has died` after lmkd's kill of that pid): corroboration, never a kill of its own."""

    who: str
    text: str
    moment: Moment


# Episode.doubt of a killer's record whose sender a text log cannot prove.
UNVERIFIED = "unverified"


class Episode(Frozen):
    """One OOM report or kill, as complete as the log allowed."""

    id: int
    killer: str
    """"kernel" for kernel OOM kills."""
    moment: Moment
    """The kill line's stamp, or the report header's when the kill line is missing."""
    began: Moment
    """The report's first line (the `invoked oom-killer` header when present)."""
    host: str | None
    trigger: Trigger | None
    constraint: str | None
    """"global", "memcg", "cpuset", "mempolicy" or None when the log does not say."""
    constraint_from: str | None
    memcg: str | None
    """The cgroup whose limit was hit (memcg OOMs)."""
    task_memcg: str | None
    victim: Victim | None
    chosen: Chosen | None
    task_columns: tuple[str, ...]
    tasks: tuple[Mapping[str, int | str], ...]
    kernel: str | None
    hardware: str | None
    call_trace: tuple[Frame, ...]
    mem_info: Mapping[str, int]
    """Mem-Info counters, in pages."""
    zones: tuple[Zone, ...]
    node_counters: Mapping[int, Mapping[str, int]]
    swap_total_kb: int | None
    swap_free_kb: int | None
    pages: Mapping[str, int]
    """`N pages RAM` and friends: ram, reserved, pagecache, in_swap_cache, ..."""
    page_size_kb: int
    page_size_from: str
    memcg_usage: tuple[MemcgCounter, ...]
    memcg_stats_path: str | None
    memcg_stats: Mapping[str, int]
    reaped: Reap | None
    no_killable: bool
    panic: str | None
    suppressed_reports: int
    """`callbacks suppressed` count seen just before a report-less kill."""
    missing: tuple[str, ...]
    lines: tuple[int, int]
    raw_lines: tuple[str, ...]
    """The episode's input lines, for quoting (capped)."""
    unit: str | None = None
    """The systemd unit (or scope) the victim ran in, from its cgroup or systemd's records."""
    unit_notes: tuple[UnitNote, ...] = ()
    witnesses: tuple[Witness, ...] = ()
    """Other processes' records of this kill (ActivityManager saw lmkd's victim die)."""
    killer_reason: str | None = None
    """Why a userspace killer acted, in its own words (systemd-oomd's pressure, earlyoom's limits)."""
    trimmed: tuple[str, ...] = ()
    """What was not kept of an oversized report to bound memory, in words ("tasks table: 1,000
    of 200,000 rows kept, ..."): the answer may then rest on part of the report."""
    table_rows: int | None = None
    """Rows the tasks table had, where more than `tasks` kept (episodes.MAX_TASK_ROWS)."""
    memcg_from: str | None = None
    """Which line named `memcg`: "oom-kill summary", "Task in line", or "memory cgroup stats
    (inferred)" when the report lost both."""
    doubt: str | None = None
    """Why the kill is a claim, not a proven kill (a userspace killer's or systemd's record):
    UNVERIFIED where its sender cannot be proven (a text log), or the journal's words for the
    process that wrote it instead of the killer (a journal entry that only names itself `kernel`,
    `logger -t kernel`, included). None: the kernel's, or proven. `check`,
    `export` and the watcher's hooks count only kills without a doubt."""

    @property
    def proven(self) -> bool:
        return self.doubt is None

    @property
    def is_kill(self) -> bool:
        """A kill the log records: of a process or a unit it names, or by a killer outside the
        kernel whose record names no victim (systemd-oomd 248's decision). A kernel report with
        no kill line and no victim is no kill the log shows."""
        return self.victim is not None or self.unit is not None or self.killer != "kernel"


class KernelWarning(Frozen):
    """A run of the same early-warning line (first, last, count)."""

    kind: str
    key: str
    text: str
    first: Moment
    last: Moment
    count: int
    host: str | None
    raw: tuple[str, ...] = ()
    """Its first line and, when it came again, its last, as the log has them (a wrapped line
    joined back holds its parts, `\n` between): what a report quotes."""


class Incident(Frozen):
    """One memory shortage: kills in one burst, all global or all in one cgroup tree, with the
    warnings that preceded them."""

    id: int
    episode_ids: tuple[int, ...]
    warnings: tuple[KernelWarning, ...]
    earliest_warning: KernelWarning | None
    lead_time_s: float | None
    """Seconds from the earliest warning to the first kill; None when a time is unknown."""
    during: tuple[KernelWarning, ...] = ()
    """Warning runs that began after its first kill and by its last: a later kill's warnings."""
    beside: tuple[int, ...] = ()
    """Ids of kills of other incidents on the same host at the same time (within a burst's gap
    of one of its own): another cgroup's shortage, or a global OOM beside a cgroup's."""
    elided: int = 0
    """Kills of it counted, not kept (model.Elided), between its first and last kept ones."""


class Crash(Frozen):
    """A process the kernel saw crash (segfault, trap): evidence that it was not an OOM kill."""

    comm: str
    pid: int
    text: str
    moment: Moment


class Unparsed(Frozen):
    """A line that looked like part of an OOM report but did not fit the grammar."""

    source: str
    line: int
    text: str


class SourceSummary(Frozen):
    name: str
    kind: str
    records: int
    recognised: int
    """Records with a known log prefix (a stamp or a syslog tag)."""
    events: int
    """Records that were part of an OOM story (report lines, kills, warnings)."""
    first: Moment | None
    last: Moment | None
    problem: str | None = None
    """Why reading stopped before the source's end (a cut compressed file), if it did."""
    program_oom: str | None = None
    """A program's own out-of-memory error among its unprefixed lines (`CUDA out of memory`,
    `java.lang.OutOfMemoryError`): the mark of a server's log given as a kernel log."""


class HostSpan(Frozen):
    """When one host's log begins and ends in the input: a host with no kill still was read."""

    host: str
    first: datetime | None
    last: datetime | None
    damaged: str | None = None
    """Its journal file, when a damaged entry there ended the read of it early."""
    read_to: datetime | None = None
    """With `damaged`: the time it was read up to (None: none of it could be read)."""


class KillIndex:
    """Where each kill not kept was (its pid, stamp and line) in flat arrays, about 50 bytes a
    kill instead of an episode's kilobytes: `why PID` can still say when that kill was."""

    def __init__(self) -> None:
        self._pids = array("q")
        self._epoch = array("d")
        """Wall time as seconds since the epoch; NaN where the line had none."""
        self._offset = array("l")
        """The wall time's UTC offset in seconds."""
        self._uptime = array("d")
        self._line = array("q")
        self._boot = array("l")
        self._seq = array("q")
        self._source = array("l")
        self._sources: dict[str, int] = {}

    def add(self, pid: int | None, moment: Moment) -> None:
        self._pids.append(pid if pid is not None and 0 <= pid < 1 << 62 else -1)
        time = moment.time
        offset = time.utcoffset() if time is not None else None
        self._epoch.append(time.timestamp() if time is not None else math.nan)
        self._offset.append(int(offset.total_seconds()) if offset is not None else 0)
        self._uptime.append(moment.uptime_s if moment.uptime_s is not None else math.nan)
        self._line.append(moment.line)
        self._boot.append(moment.boot)
        self._seq.append(moment.seq)
        self._source.append(self._sources.setdefault(moment.source, len(self._sources)))

    def __len__(self) -> int:
        return len(self._pids)

    def resolve(self, resolve: Callable[[Moment], Moment]) -> None:
        """Give the kills read before their boot's time was known a wall time (uptime + boot)."""
        for i in range(len(self._pids)):
            if math.isnan(self._epoch[i]) and not math.isnan(self._uptime[i]):
                time = resolve(self._moment(i)).time
                if time is not None:
                    offset = time.utcoffset()
                    self._epoch[i] = time.timestamp()
                    self._offset[i] = int(offset.total_seconds()) if offset is not None else 0

    def find(self, pid: int) -> list[Moment]:
        """When the kills of this pid were, oldest first (their stamps as printed are not kept)."""
        return [self._moment(i) for i, value in enumerate(self._pids) if value == pid]

    def _moment(self, i: int) -> Moment:
        epoch, uptime = self._epoch[i], self._uptime[i]
        time = (
            None
            if math.isnan(epoch)
            else datetime.fromtimestamp(epoch, timezone(timedelta(seconds=self._offset[i])))
        )
        source = next(name for name, number in self._sources.items() if number == self._source[i])
        uptime_s = None if math.isnan(uptime) else uptime
        return Moment(time, uptime_s, "", source, self._line[i], self._boot[i], self._seq[i])


class KillKind(Frozen):
    """What a metric counts a kill by: the raw fields `metrics.kill_labels` words."""

    constraint: str | None
    killer: str
    unit: str | None
    cgroup: str | None
    comm: str | None
    """None: the kill line was lost (no victim)."""


class Elided(Frozen):
    """Kills between the first and the last ones kept, counted instead of kept (bounded memory)."""

    kills: int
    first: Moment | None
    last: Moment | None
    victims: tuple[tuple[str, int], ...]
    """The most frequent victim names among them, with counts, most frequent first."""
    warning_runs: int
    """Warning runs dropped with them."""
    kept_first: int
    kept_last: int
    causes: tuple[tuple[str, int], ...] = ()
    """Their causes (story.cause_of) with counts, most frequent first."""
    spans: tuple[tuple[str, int, Moment, Moment], ...] = ()
    """Every victim name counted one by one (the rest "(other)"): its kills, first and last."""
    index: KillIndex | None = None
    """Each kill's pid and place, to find one again (`why PID`); equal only to itself."""
    by_host: tuple[tuple[str | None, str, int], ...] = ()
    """Their kills by host and victim name (past episodes.elide's bound, the name "(other)")."""
    by_kind: tuple[tuple[KillKind, int], ...] = ()
    """Their kills by what a metric labels a kill with, for `export` (past a bound, comm "(other)")."""
    per_minute: tuple[tuple[datetime, int], ...] = ()
    """Their kills with a wall time, counted per minute (per quarter-hour, the clock's, on a log
    of very many minutes), for the kills-over-time chart."""
    one_burst: bool = False
    """They were one shortage: one host, one scope, no gap past incidents.BURST_GAP_S between
    two of them; an incident whose kills end just before them and begin again just after is one."""
    host: str | None = None
    """Their host, when `one_burst`."""
    scope: tuple[str, str | None] = ("unknown", None)
    """What ran short in them (incidents.scope), when `one_burst`."""
    incidents: int = 0
    """The shortages among them that no kept incident continues: with the kept incidents, the
    incidents of the whole log."""

    def find(self, pid: int) -> list[Moment]:
        """When the kills of `pid` among these were."""
        return self.index.find(pid) if self.index is not None else []

    def span_of(self, matches: Callable[[str], bool]) -> tuple[int, Moment, Moment] | None:
        """How many of these kills had a victim name `matches` takes, the first and the last."""
        found = [(count, first, last) for name, count, first, last in self.spans if matches(name)]
        if not found:
            return None
        return (
            sum(count for count, _, _ in found),
            min((first for _, first, _ in found), key=lambda m: m.seq),
            max((last for _, _, last in found), key=lambda m: m.seq),
        )

    def note(self) -> str:
        when = ""
        if self.first is not None and self.last is not None:
            when = f" ({_when(self.first)} to {_when(self.last)})"
        names = ", ".join(f"{name} \u00d7{count:,}" for name, count in self.victims[:3])
        runs = f" and {self.warning_runs:,} warning runs" if self.warning_runs else ""
        return (
            f"{self.kills:,} kills{when}{runs} between the first {self.kept_first:,} and the last "
            f"{self.kept_last:,} were counted, not kept, to bound memory"
            + (f" (victims: {names})" if names else "")
            + "; narrow the range with --since/--until to see them"
        )


def _when(moment: Moment) -> str:
    if moment.time is not None:
        return moment.time.isoformat(sep=" ", timespec="seconds")
    if moment.uptime_s is not None:
        return f"uptime {moment.uptime_s:.0f}s"
    if moment.clock_s is not None:
        return f"{moment.raw} (date unknown)"
    return f"line {moment.line}"


# A story draws the watcher's samples of this long before its kill; a `--record` file's reader
# keeps no others (a watcher under a warning for days writes one a second).
SAMPLES_BEFORE_S = 1800.0


class ProbeSample(Frozen):
    """One of the watcher's samples, as its `--record` file keeps them (one a second while a
    warning is active), or as the watcher telling a kill's story live holds them (one a second,
    warning or not): what no kernel log holds, drawn as the minutes before a kill."""

    time: datetime
    memavailable_kb: int
    psi_some_avg10: float | None
    psi_full_avg10: float | None
    host: str | None
    """The host the record file's own lines name (the watcher's machine), if they name one."""
    live: bool = False
    """Held by the watcher now telling the story, not read back from a `--record` file."""


class Analysis(Frozen, dict=True):  # dict: where the cached_property lookups are kept
    """Everything the input held about OOM kills."""

    episodes: tuple[Episode, ...]
    warnings: tuple[KernelWarning, ...]
    incidents: tuple[Incident, ...]
    sources: tuple[SourceSummary, ...]
    unparsed: tuple[Unparsed, ...]
    unparsed_count: int
    hosts: tuple[str, ...] = ()
    """Every host name the input's prefixes carried (what --redact must hide)."""
    crashes: tuple[Crash, ...] = ()
    range_since: datetime | None = None
    """The --since/--until range applied, if any."""
    range_until: datetime | None = None
    outside_range: int = 0
    """Kills the input held that fell outside the range (or had no wall time to judge by)."""
    read_twice: int = 0
    """Kills read twice (overlapping files, a journal and its syslog copy, a report quoted in a
    log), kept once."""
    warnings_read_twice: int = 0
    """Warning lines a second source gave again (a syslog beside kern.log, a .gz copy), counted once."""
    elided: Elided | None = None
    """Kills of a very long log between the first and last ones kept (episodes.KEPT_FIRST...)."""
    host_spans: tuple[HostSpan, ...] = ()
    """Every host whose lines were read, with the first and last wall time of its log."""
    samples: tuple[ProbeSample, ...] = ()
    """The watcher's samples near the kills, from `--record` files, oldest first."""

    @cached_property
    def _by_id(self) -> dict[int, tuple[Episode, Incident | None]]:
        """Episode id → (episode, its incident): every format asks once per kill, so no scans."""
        incident_of = {e: incident for incident in self.incidents for e in incident.episode_ids}
        return {e.id: (e, incident_of.get(e.id)) for e in self.episodes}

    @cached_property
    def _earlier_report(self) -> dict[int, Episode]:
        """Episode id → the report before it of the same cgroup on the same host (its counters)."""
        earlier: dict[int, Episode] = {}
        latest: dict[tuple[str | None, str], Episode] = {}
        for episode in self.episodes:
            if episode.memcg is None or not episode.memcg_usage:
                continue
            key = (episode.host, episode.memcg)
            if key in latest:
                earlier[episode.id] = latest[key]
            latest[key] = episode
        return earlier

    def range_note(self) -> str | None:
        """The range applied and what it left out, for footers and "nothing found" messages."""
        if self.range_since is None and self.range_until is None:
            return None
        parts = (
            [f"since {self.range_since.isoformat(sep=' ', timespec='seconds')}"] if self.range_since else []
        )
        if self.range_until is not None:
            parts.append(f"until {self.range_until.isoformat(sep=' ', timespec='seconds')}")
        outside = self.outside_range
        left = (
            f"{outside:,} kill{'s' if outside != 1 else ''} in the input outside it"
            if outside
            else "none outside it"
        )
        return f"range {' '.join(parts)}: {left}"

    @property
    def source_names(self) -> str:
        return ", ".join(s.name for s in self.sources)

    def span(self) -> tuple[Moment | None, Moment | None]:
        """The first and last stamped line of all the input: what a report can say it covered."""
        firsts = [s.first for s in self.sources if s.first is not None]
        lasts = [s.last for s in self.sources if s.last is not None]
        if firsts and all(m.time is not None for m in firsts + lasts):
            return min(firsts, key=lambda m: m.time), max(lasts, key=lambda m: m.time)  # type: ignore[arg-type,return-value]
        return (firsts[0] if firsts else None), (lasts[-1] if lasts else None)

    def incident_of(self, episode: Episode) -> Incident | None:
        found = self._by_id.get(episode.id)
        return found[1] if found is not None else None

    def episode(self, episode_id: int) -> Episode:
        return self._by_id[episode_id][0]

    def find(self, episode_id: int) -> Episode | None:
        """The episode of this id, or None when a range or a redaction left it out."""
        found = self._by_id.get(episode_id)
        return found[0] if found is not None else None

    def previous_in_memcg(self, episode: Episode) -> Episode | None:
        """The report before this one of the same memory cgroup (same host), if the log holds one."""
        return self._earlier_report.get(episode.id)
