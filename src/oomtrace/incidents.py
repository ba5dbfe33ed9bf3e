"""Episodes and warning runs → incidents: which kills were one memory shortage, and what warned first."""

from __future__ import annotations

from collections import deque

from oomtrace.model import Episode, Incident, KernelWarning, Moment

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
    return None


def incidents_of(episodes: list[Episode], warnings: list[KernelWarning]) -> list[Incident]:
    groups: list[list[Episode]] = []
    for episode in episodes:
        if groups:
            previous = groups[-1][-1]
            gap = moment_gap(previous.moment, episode.moment)
            if gap is not None and 0 <= gap <= BURST_GAP_S and previous.host == episode.host:
                groups[-1].append(episode)
                continue
        groups.append([episode])
    incidents = []
    previous_end: Moment | None = None
    # Lost records say the log is incomplete, not that memory ran short: never a warning.
    candidates = _WarningSweep([w for w in warnings if w.kind != "lost-messages"])
    for number, group in enumerate(groups, start=1):
        start = group[0].moment
        attached = tuple(w for w in candidates.near(start) if _warns(w, start, previous_end, group[0].host))
        # A memory warning tells more than the GPU's Xid chatter: it is the first warning when
        # there is one, however early an Xid came.
        memory = [w for w in attached if w.kind in MEMORY_WARNINGS]
        earliest = min(memory or attached, key=lambda w: _sort_key(w.first), default=None)
        lead = moment_gap(earliest.first, start) if earliest else None
        incidents.append(Incident(number, tuple(e.id for e in group), attached, earliest, lead))
        previous_end = group[-1].moment
        candidates.passed(previous_end)
    return incidents


def _clock(moment: Moment) -> tuple[tuple[object, ...], float]:
    """Which clock a moment can be compared on, and its reading: wall time, else uptime within
    its source and boot, else input order within its source (what moment_gap compares)."""
    if moment.time is not None:
        return ("wall",), moment.time.timestamp()
    if moment.uptime_s is not None:
        return ("uptime", moment.source, moment.boot), moment.uptime_s
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

    def passed(self, end: Moment) -> None:
        """An incident ended at `end`: warnings that last came before it belong to it or none."""
        clock, now = _clock(end)
        if clock in self._active:
            self._active[clock] = [w for w in self._active[clock] if _clock(w.last)[1] > now]


def _sort_key(moment: Moment) -> tuple[float, int]:
    if moment.time is not None:
        return (moment.time.timestamp(), moment.seq)
    return (float("inf"), moment.seq)


def _warns(warning: KernelWarning, start: Moment, previous_end: Moment | None, host: str | None) -> bool:
    """Did this warning run come before the incident and after the one before it?"""
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
