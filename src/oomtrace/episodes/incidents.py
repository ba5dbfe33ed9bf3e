"""Episodes and warning runs → incidents: which kills were one memory shortage, and what warned first."""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable
from typing import NamedTuple

from oomtrace.model import Elided, Episode, Incident, KernelWarning, Moment

# Kills closer together than this are one incident (the kernel often kills several
# processes within seconds when one kill does not free enough).
BURST_GAP_S = 60.0
# How far before an incident a warning may be and still count as its warning.
LOOKBACK_S = 3600.0
# Warnings that say memory ran short (ranked first when an incident names its first warning).
MEMORY_WARNINGS = frozenset(
    (
        "nvrm-no-memory",
        "page-allocation-failure",
        "journald-memory-pressure",
        "overcommit-refused",
        "earlyoom-low-memory",
        "watch-warning",
    )
)


def moment_gap(a: Moment, b: Moment) -> float | None:
    """b - a in seconds, or None when the two cannot be compared."""
    if a.time is not None and b.time is not None:
        return (b.time - a.time).total_seconds()
    if a.uptime_s is not None and b.uptime_s is not None and a.source == b.source and a.boot == b.boot:
        return b.uptime_s - a.uptime_s
    if a.clock_s is not None and b.clock_s is not None and a.source == b.source:
        return b.clock_s - a.clock_s
    return None


class Bridge(NamedTuple):
    """The kills a long log counted, not kept (model.Elided), after the kept kill of seq `after`."""

    after: int
    elided: Elided

    def joins(self, last: Episode, episode: Episode) -> bool:
        """Were `last` (kept before them) and `episode` (kept after them) one shortage with them:
        one host, one scope, and no gap past a burst's from one kill to the next?"""
        elided = self.elided
        if not (elided.one_burst and last.moment.seq <= self.after < episode.moment.seq):
            return False
        if elided.first is None or elided.last is None or not last.host == episode.host == elided.host:
            return False
        into, out = moment_gap(last.moment, elided.first), moment_gap(elided.last, episode.moment)
        if into is None or out is None or not (0 <= into <= BURST_GAP_S and 0 <= out <= BURST_GAP_S):
            return False
        return one_shortage(scope(last), elided.scope) and one_shortage(scope(episode), elided.scope)


def incidents_of(
    episodes: list[Episode], warnings: list[KernelWarning], bridge: Bridge | None = None
) -> list[Incident]:
    """One incident per memory shortage: kills close together on one host, all global or all in
    one cgroup tree (a kill in /a and one in /b at the same second are two shortages). With
    `bridge`, the kills counted between the kept ones: an incident they run through is one."""
    groups, previous_kill, bridged = _groups(episodes, bridge)
    incidents = []
    # Lost records say the log is incomplete, not that memory ran short: never a warning.
    kept = [w for w in warnings if w.kind != "lost-messages"]
    candidates = _WarningSweep(kept)
    timeline = _Timeline(kept)
    beside = _beside(episodes, groups)
    for number, group in enumerate(groups, start=1):
        start, host = group[0].moment, group[0].host
        previous = previous_kill[group[0].id]
        if previous is not None:
            candidates.passed(previous, host)
        attached = tuple(w for w in candidates.near(start) if _warns(w, start, previous, host))
        earliest = first_warning(attached)
        lead = moment_gap(earliest.first, start) if earliest else None
        during = tuple(w for w in timeline.between(start, group[-1].moment) if _same_host(w.host, host))
        incidents.append(
            Incident(
                number,
                tuple(e.id for e in group),
                attached,
                earliest,
                lead,
                during=during,
                beside=tuple(beside.get(number - 1, ())),
                elided=bridge.elided.kills if bridge is not None and number - 1 in bridged else 0,
            )
        )
    return incidents


def first_warning(warnings: Iterable[KernelWarning]) -> KernelWarning | None:
    """The warning a story names first: the earliest memory warning, else the earliest of all
    (a memory warning tells more than the GPU's Xid chatter, however early an Xid came)."""
    runs = list(warnings)
    memory = [w for w in runs if w.kind in MEMORY_WARNINGS]
    return min(memory or runs, key=lambda w: _sort_key(w.first), default=None)


def scope(episode: Episode) -> tuple[str, str | None]:
    """What ran short: ("global", None), ("memcg", path or None), or ("unknown", None)."""
    if episode.constraint == "memcg":
        return "memcg", episode.memcg
    if episode.constraint in ("global", "cpuset", "mempolicy"):
        return "global", None
    return "unknown", None


def one_shortage(a: tuple[str, str | None], b: tuple[str, str | None]) -> bool:
    """Can two kills of these scopes be one shortage? Global with global; a cgroup with itself or
    one under it (a parent's limit covers its children); a scope the log does not say with any."""
    if "unknown" in (a[0], b[0]):
        return True
    if a[0] != b[0]:
        return False
    if a[0] == "global" or a[1] is None or b[1] is None:
        return True
    return _under(a[1], b[1]) or _under(b[1], a[1])


def _under(path: str, ancestor: str) -> bool:
    parent = ancestor.rstrip("/")
    return path == ancestor or not parent or path.startswith(parent + "/")


# Groups still open to a kill that follows (per host, one per cgroup tree): a bound for a log of
# thousands of cgroups killed within a minute.
_OPEN_GROUPS = 64


def _groups(
    episodes: list[Episode], bridge: Bridge | None = None
) -> tuple[list[list[Episode]], dict[int, Moment | None], set[int]]:
    """Kills grouped into shortages, for each group's first kill the host's kill before it, and
    the groups that run through the kills `bridge` counted."""
    groups: list[list[Episode]] = []
    scopes: list[set[tuple[str, str | None]]] = []
    """Each group's scopes, once each (a crash loop of one cgroup is one)."""
    open_groups: list[int] = []
    last_kill: dict[str | None, Moment] = {}
    previous: dict[int, Moment | None] = {}
    bridged: set[int] = set()

    def gap_to(last: Episode, episode: Episode) -> float | None:
        if bridge is not None and bridge.joins(last, episode):
            return 0.0
        return moment_gap(last.moment, episode.moment)

    for episode in episodes:
        mine = scope(episode)
        joined = None
        # Kills come in time order: a group a burst's gap behind this kill is behind every later one.
        open_groups[:] = [
            index
            for index in open_groups
            if (gap := gap_to(groups[index][-1], episode)) is None or gap <= BURST_GAP_S
        ]
        for index in reversed(open_groups):
            last = groups[index][-1]
            gap = gap_to(last, episode)
            if last.host != episode.host or gap is None or not 0 <= gap <= BURST_GAP_S:
                continue
            if not scopes[index] or any(one_shortage(mine, theirs) for theirs in scopes[index]):
                joined = index
                if bridge is not None and bridge.joins(last, episode):
                    bridged.add(index)
                break
        if joined is None:
            groups.append([episode])
            scopes.append(set())
            joined = len(groups) - 1
            open_groups.append(joined)
            previous[episode.id] = last_kill.get(episode.host)
            del open_groups[:-_OPEN_GROUPS]
        else:
            groups[joined].append(episode)
        if mine[0] != "unknown":
            scopes[joined].add(mine)
        last_kill[episode.host] = episode.moment
    return groups, previous, bridged


# How many kills after each one are looked at for kills of other incidents at the same time.
_NEIGHBOURS = 64
# How many such kills an incident names.
MAX_BESIDE = 20


def _beside(episodes: list[Episode], groups: list[list[Episode]]) -> dict[int, list[int]]:
    """For each group (by index), the kills of other groups on its host within BURST_GAP_S of one
    of its own: what else happened on the machine at the same time."""
    group_of = {e.id: index for index, group in enumerate(groups) for e in group}
    found: dict[int, dict[int, None]] = {}
    for i, episode in enumerate(episodes):
        for other in episodes[i + 1 : i + 1 + _NEIGHBOURS]:
            gap = moment_gap(episode.moment, other.moment)
            if gap is None or gap > BURST_GAP_S:
                break
            mine, theirs = group_of[episode.id], group_of[other.id]
            if mine != theirs and episode.host == other.host:
                for index, kill in ((mine, other.id), (theirs, episode.id)):
                    named = found.setdefault(index, {})
                    if len(named) < MAX_BESIDE:
                        named[kill] = None
    return {index: sorted(named) for index, named in found.items()}


def _same_host(a: str | None, b: str | None) -> bool:
    return a == b or a is None or b is None


class _Timeline:
    """Warning runs by when they began, per clock: those that began within an incident (after its
    first kill, up to its last) are found by bisection, however long the log."""

    def __init__(self, warnings: list[KernelWarning]) -> None:
        by_clock: dict[tuple[object, ...], list[tuple[float, int, KernelWarning]]] = {}
        for warning in warnings:
            clock, reading = _clock(warning.first)
            by_clock.setdefault(clock, []).append((reading, warning.first.seq, warning))
        self._sorted = {clock: sorted(runs, key=lambda r: (r[0], r[1])) for clock, runs in by_clock.items()}
        self._keys = {clock: [r[0] for r in runs] for clock, runs in self._sorted.items()}

    def between(self, start: Moment, end: Moment) -> list[KernelWarning]:
        clock, since = _clock(start)
        until_clock, until = _clock(end)
        runs = self._sorted.get(clock)
        if runs is None or until_clock != clock:
            return []
        keys = self._keys[clock]
        low = bisect.bisect_right(keys, since)
        high = bisect.bisect_right(keys, until)
        return [warning for _, _, warning in runs[low:high]]


def _clock(moment: Moment) -> tuple[tuple[object, ...], float]:
    """Which clock a moment can be compared on, and its reading: wall time, else uptime within
    its source and boot, else a dateless clock within its source, else input order within its
    source (what moment_gap compares)."""
    if moment.time is not None:
        return ("wall",), moment.time.timestamp()
    if moment.uptime_s is not None:
        return ("uptime", moment.source, moment.boot), moment.uptime_s
    if moment.clock_s is not None:
        return ("clock", moment.source), moment.clock_s
    return ("order", moment.source), float(moment.seq)


class _WarningSweep:
    """The warnings that may still precede an incident, found in one pass over incidents in
    time order: each warning run enters once (when the kills reach its start) and leaves once
    (when it is too old, or an incident after it has passed), so a crash loop of 200,000 kills
    costs 200,000 steps, not 200,000 times every warning. `_warns` still has the last word."""

    def __init__(self, warnings: list[KernelWarning]) -> None:
        self._waiting: dict[tuple[object, ...], deque[KernelWarning]] = {}
        for warning in sorted(warnings, key=lambda w: _clock(w.first)[1]):
            self._waiting.setdefault(_clock(warning.first)[0], deque()).append(warning)
        self._active: dict[tuple[object, ...], list[KernelWarning]] = {}

    def near(self, start: Moment) -> list[KernelWarning]:
        clock, now = _clock(start)
        waiting = self._waiting.get(clock)
        active = self._active.setdefault(clock, [])
        while waiting and _clock(waiting[0].first)[1] <= now:
            active.append(waiting.popleft())
        if clock[0] != "order":
            active[:] = [w for w in active if _clock(w.last)[1] >= now - LOOKBACK_S]
        return active

    def passed(self, kill: Moment, host: str | None) -> None:
        """A kill on `host` came at `kill`: its warnings that last came before it belong to its
        incident or none."""
        clock, now = _clock(kill)
        if clock in self._active:
            self._active[clock] = [
                w for w in self._active[clock] if _clock(w.last)[1] > now or not _same_host(w.host, host)
            ]


def _sort_key(moment: Moment) -> tuple[float, int]:
    if moment.time is not None:
        return (moment.time.timestamp(), moment.seq)
    return (float("inf"), moment.seq)


def _warns(warning: KernelWarning, start: Moment, previous_end: Moment | None, host: str | None) -> bool:
    """Did this warning run come before the incident and after the host's kill before it?"""
    if warning.host != host and warning.host is not None and host is not None:
        return False
    before_start = moment_gap(warning.first, start)
    if before_start is None:
        # Times cannot be compared: fall back to input order within one source.
        if warning.first.source != start.source or warning.first.seq > start.seq:
            return False
        return previous_end is None or warning.first.seq > previous_end.seq
    if before_start < 0:
        return False
    since_last = moment_gap(warning.last, start)
    if since_last is not None and since_last > LOOKBACK_S:
        return False
    if previous_end is not None:
        after_previous = moment_gap(previous_end, warning.last)
        if after_previous is not None and after_previous <= 0:
            return False
    return True
