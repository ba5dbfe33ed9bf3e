"""Pictures as data: the series a chart draws, computed once from the model.

A format draws these (a Mermaid block on GitHub, a bar of blocks in the terminal) and JSON writes
them as they are, so the three cannot disagree. Every number here is one the story's words also
rest on: the memory parts are Mem-Info's, the run-up is the story's timeline, the bars count kills.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from oomtrace.explain import MemoryPicture
from oomtrace.frozen import Frozen
from oomtrace.model import ProbeSample
from oomtrace.story import TimelineEntry
from oomtrace.units import duration, kib, relative, timeline_clock

# A chart has at most this many bars or events: past it, buckets widen (bars) or the run-up
# keeps the records nearest the kill. A picture of 300 hourly bars says nothing more than 24 do,
# and GitHub refuses a Mermaid block over 50,000 characters.
MAX_POINTS = 24


class Part(Frozen):
    key: str
    """What the part is, for a format that draws each kind its own way: "anon", "file", "slab",
    "pagetables", "free", "unaccounted" (in no LRU list, slab or page table), "other"."""
    label: str
    kb: int


class ShareChart(Frozen):
    """Parts of a whole: RAM at the kill, split as Mem-Info splits it."""

    title: str
    whole_kb: int
    parts: tuple[Part, ...]
    """Each part's size; they add up to `whole_kb`."""

    def legend(self) -> tuple[str, ...]:
        """Each part in words, as every picture labels it: "page cache 940 KiB (<1%)"."""
        return tuple(f"{p.label} {kib(p.kb)} ({_share(p.kb, self.whole_kb)})" for p in self.parts)

    def data(self) -> dict[str, object]:
        return {
            "kind": "share",
            "title": self.title,
            "whole_kb": self.whole_kb,
            "parts": [{"label": p.label, "kb": p.kb} for p in self.parts],
        }


class Bars(Frozen):
    """Counts per bucket: kills per hour or day, kills per host."""

    title: str
    axis: str
    """What a bar stands for: "hour", "day", "host"."""
    labels: tuple[str, ...]
    counts: tuple[int, ...]
    note: str = ""
    """What was folded to keep the chart readable ("3 more hosts with 4 kills")."""

    def data(self) -> dict[str, object]:
        return {
            "kind": "bars",
            "title": self.title,
            "axis": self.axis,
            "bars": [{"label": a, "count": n} for a, n in zip(self.labels, self.counts, strict=True)],
            "note": self.note or None,
        }


class Event(Frozen):
    offset: str
    """"T-3m13s": where it stands against the kill."""
    clock: str
    kind: str
    text: str


class RunUp(Frozen):
    """The records of an incident against time, the kill at T±0s."""

    title: str
    events: tuple[Event, ...]
    left_out: int = 0
    """Records of the timeline beyond MAX_POINTS, the ones furthest from the kill."""

    def data(self) -> dict[str, object]:
        return {
            "kind": "run-up",
            "title": self.title,
            "events": [
                {"offset": e.offset, "clock": e.clock, "kind": e.kind, "text": e.text} for e in self.events
            ],
            "left_out": self.left_out,
        }


class Point(Frozen):
    """One interval of the watcher's samples: its worst figures, and the warnings begun in it."""

    before_s: int
    """Seconds before the kill the interval ends (it starts `Trace.every_s` earlier)."""
    memavailable_kb: int
    """The lowest MemAvailable sampled in the interval."""
    psi_some: float | None
    """The highest PSI some avg10 (%) sampled in it, if the samples carry PSI."""
    psi_full: float | None
    warnings: tuple[str, ...] = ()
    """The warnings that began in the interval, each with its own offset, as the story's timeline
    words them: "T-3m13s NVIDIA driver out of memory …"."""


class Trace(Frozen):
    """The watcher's samples of the minutes before the kill (a `watch --record` file's): what
    no kernel log holds, MemAvailable falling and memory pressure rising. One point an interval,
    the intervals back to back up to the last before the kill that has samples."""

    title: str
    every_s: int
    """Each point's interval, in seconds."""
    points: tuple[Point, ...]
    """Oldest first; no interval between two points is without samples."""
    samples: int
    """How many samples the points stand for."""
    left_out: int = 0
    """Samples before a pause in sampling (a warning that cleared) longer than MAX_PAUSE_S."""
    live: bool = False
    """Held by the watcher telling the story live (one a second, warning or not), not read back
    from a `--record` file (one a second while a warning was active)."""

    @property
    def has_pressure(self) -> bool:
        """Does every point carry PSI? A line with holes in it would have to invent them."""
        return all(p.psi_some is not None for p in self.points)

    @property
    def has_full(self) -> bool:
        return all(p.psi_full is not None for p in self.points)

    def marks(self) -> tuple[str, ...]:
        """Each warning begun within the samples' intervals, with its offset."""
        return tuple(w for p in self.points for w in p.warnings)

    def data(self) -> dict[str, object]:
        return {
            "kind": "samples",
            "title": self.title,
            "every_s": self.every_s,
            "samples": self.samples,
            "left_out": self.left_out,
            "live": self.live,
            "points": [
                {
                    "before_s": p.before_s,
                    "memavailable_kb": p.memavailable_kb,
                    "psi_some_avg10": p.psi_some,
                    "psi_full_avg10": p.psi_full,
                    "warnings": list(p.warnings),
                }
                for p in self.points
            ],
        }


Chart = ShareChart | Bars | RunUp | Trace


def memory_chart(memory: MemoryPicture | None) -> ShareChart | None:
    """RAM at the kill, or None where Mem-Info does not give the parts that add up to it."""
    if memory is None or not memory.ram_kb:
        return None
    named = (
        # shmem pages sit on the anon LRU lists (they are swap-backed): they are inside anon.
        ("anon", "anon (incl. shmem)" if memory.shmem_kb else "anon", memory.anon_kb),
        ("file", "page cache", memory.file_kb),
        ("slab", "slab", memory.slab_kb),
        ("pagetables", "page tables", memory.pagetables_kb),
        ("free", "free", memory.free_kb),
        ("unaccounted", "in no LRU list, slab or page table", memory.unaccounted_kb),
    )
    required = (memory.anon_kb, memory.file_kb, memory.free_kb, memory.unaccounted_kb)
    if any(kb is None for kb in required):
        return None
    parts = [Part(key, label, kb) for key, label, kb in named if kb]
    # Unevictable, isolated and misc-reclaimable pages: counted by Mem-Info, too small to name.
    rest = memory.ram_kb - sum(p.kb for p in parts)
    if rest > 0:
        parts.append(Part("other", "other LRU (unevictable, isolated)", rest))
    if rest < 0:
        return None  # the parts overrun RAM: a cut Mem-Info; a pie of it would be false
    return ShareChart(f"RAM at the kill: {kib(memory.ram_kb)}", memory.ram_kb, tuple(parts))


def run_up(entries: Sequence[TimelineEntry]) -> RunUp | None:
    """The story's timeline against time; None where nothing came before the kill (a lone kill,
    or its report's own lines at T±0s), which a picture adds nothing to."""
    offsets = [e.offset_s for e in entries if e.offset_s is not None]
    if len(entries) < 2 or not any(relative(o) != relative(0.0) and o < 0 for o in offsets):
        return None
    kept = list(entries)
    left_out = 0
    if len(kept) > MAX_POINTS:
        # The records nearest the kill tell the run-up; the oldest go first.
        order = sorted(range(len(kept)), key=lambda i: abs(kept[i].offset_s or 0.0))
        chosen = sorted(order[:MAX_POINTS])
        left_out = len(kept) - MAX_POINTS
        kept = [kept[i] for i in chosen]
    events = tuple(Event(relative(e.offset_s), timeline_clock(e.moment), e.kind, e.short) for e in kept)
    # The title says the span the picture shows: from its first record to its last.
    shown = [e.offset_s for e in kept if e.offset_s is not None]
    title = f"The run-up to the kill: {duration(-min(shown))} before it"
    if max(shown) > 0 and relative(max(shown)) != relative(0.0):
        title += f" and {duration(max(shown))} after"
    return RunUp(title, events, left_out)


# A line of samples has at most this many points; the interval each stands for is the shortest
# of these (seconds) that fits the samples' span and is no shorter than a pause between two
# samples, so that no interval between the first and the last is empty (a line over an empty
# interval would invent its value).
MAX_TRACE_POINTS = 30
_INTERVALS_S = (1, 2, 5, 10, 15, 20, 30, 60, 120, 300)
# The watcher samples once a second while a warning is active: a longer pause than this is a
# warning that cleared, and the samples before it are another stretch, left out of the picture.
MAX_PAUSE_S = 60.0
# The timeline's kinds that are warnings, marked where they began.
_WARNING_KINDS = ("warning", "server-warning")


def samples_trace(
    samples: Sequence[ProbeSample], kill: datetime | None, timeline: Sequence[TimelineEntry]
) -> Trace | None:
    """The last stretch of samples before the kill as at most MAX_TRACE_POINTS intervals, each
    its lowest MemAvailable and highest PSI; None for fewer than two intervals."""
    if kill is None or not samples:
        return None
    # Each sample with its seconds before the kill, latest first; the stretch ends at the first
    # long pause.
    timed = sorted((((kill - s.time).total_seconds(), s) for s in samples), key=lambda pair: pair[0])
    kept, pause = 1, 0.0
    while kept < len(timed) and timed[kept][0] - timed[kept - 1][0] <= MAX_PAUSE_S:
        pause = max(pause, timed[kept][0] - timed[kept - 1][0])
        kept += 1
    span = timed[kept - 1][0] - timed[0][0]
    every = next((i for i in _INTERVALS_S if i >= pause and span / i < MAX_TRACE_POINTS - 1), 0)
    every = every or max(-(-int(span) // (MAX_TRACE_POINTS - 1)), int(pause) + 1)
    # Interval k holds what came k*every to (k+1)*every before the kill.
    buckets: dict[int, list[ProbeSample]] = {}
    for seconds, sample in timed[:kept]:
        buckets.setdefault(int(seconds // every), []).append(sample)
    if len(buckets) < 2:
        return None
    warned: dict[int, list[str]] = {}
    for entry in timeline:
        if entry.kind in _WARNING_KINDS and entry.offset_s is not None and entry.offset_s <= 0:
            said = f"{relative(entry.offset_s)} {entry.short}"
            warned.setdefault(int(-entry.offset_s // every), []).append(said)
    points = []
    for k in range(max(buckets), min(buckets) - 1, -1):
        held = buckets[k]
        some = [s.psi_some_avg10 for s in held if s.psi_some_avg10 is not None]
        full = [s.psi_full_avg10 for s in held if s.psi_full_avg10 is not None]
        points.append(
            Point(
                k * every,
                min(s.memavailable_kb for s in held),
                max(some) if some else None,
                max(full) if full else None,
                tuple(dict.fromkeys(warned.get(k, ()))),
            )
        )
    title = f"The watcher's samples before the kill, the worst of each {duration(every)}"
    live = all(sample.live for _, sample in timed[:kept])
    return Trace(title, every, tuple(points), kept, len(timed) - kept, live)


# Fewer kills than this are a list, not a trend: the report's overview says them.
_FEWEST_KILLS = 3
# Bucket widths from fine to coarse: the finest that fits the span in MAX_POINTS bars is used;
# a span longer than 30 days a bar allows gets bars of as many days as it needs.
_BUCKETS: tuple[tuple[str, timedelta], ...] = (
    ("minute", timedelta(minutes=1)),
    ("10 minutes", timedelta(minutes=10)),
    ("hour", timedelta(hours=1)),
    ("6 hours", timedelta(hours=6)),
    ("day", timedelta(days=1)),
    ("week", timedelta(days=7)),
    ("30 days", timedelta(days=30)),
)


def kills_over_time(times: Iterable[datetime], counted: Iterable[tuple[datetime, int]] = ()) -> Bars | None:
    """Kills per bucket of time, empty buckets included (a gap is part of the picture); `counted`:
    kills counted per minute rather than kept (a long log's middle), in the bars too."""
    weights = [(t, 1) for t in times] + [(t, n) for t, n in counted]
    stamps = sorted(t for t, _ in weights)
    if sum(n for _, n in weights) < _FEWEST_KILLS or stamps[0] == stamps[-1]:
        return None
    span = stamps[-1] - stamps[0]
    # A span of n widths can touch n + 1 buckets once the first is aligned to the clock.
    fitting = ((n, w) for n, w in _BUCKETS if span / w < MAX_POINTS - 1)
    days = -(-span.days // (MAX_POINTS - 2))
    name, width = next(fitting, (f"{days} days", timedelta(days=days)))
    start = _floor(stamps[0], width)
    counts: Counter[int] = Counter()
    for t, n in weights:
        counts[(t - start) // width] += n
    buckets = max(counts) + 1
    if buckets < 2:
        return None  # one bar: all in one minute, which the heading already says
    dated = "%Y-%m-%d" if stamps[0].year != stamps[-1].year else "%m-%d"
    labels = tuple(_bucket_label(start + i * width, width, dated) for i in range(buckets))
    return Bars(f"OOM kills per {name}", name, labels, tuple(counts[i] for i in range(buckets)))


def kills_per_host(hosts: Sequence[tuple[str, int]]) -> Bars | None:
    """Kills per host, most first; past MAX_POINTS the rest are said in a note."""
    if len(hosts) < 2 or not any(n for _, n in hosts):
        return None
    ranked = sorted(hosts, key=lambda h: -h[1])
    shown, rest = ranked[:MAX_POINTS], ranked[MAX_POINTS:]
    note = f"{len(rest):,} more host(s) with {sum(n for _, n in rest):,} kill(s)" if rest else ""
    return Bars("OOM kills per host", "host", tuple(h for h, _ in shown), tuple(n for _, n in shown), note)


def _share(part: int, whole: int) -> str:
    share = 100 * part / whole
    # A sliver is not nothing: 940 KiB of page cache is "<1%", never "0%".
    return "<1%" if 0 < share < 0.5 else f"{share:.0f}%"


def _floor(time: datetime, width: timedelta) -> datetime:
    """The start of the bucket holding `time`, on the clock's own boundaries (hours at :00)."""
    midnight = time.replace(hour=0, minute=0, second=0, microsecond=0)
    if width >= timedelta(days=1):
        return midnight
    return midnight + ((time - midnight) // width) * width


def _bucket_label(start: datetime, width: timedelta, dated: str) -> str:
    if width >= timedelta(days=1):
        return start.strftime(dated)
    return start.strftime(f"{dated} %H:%M")
