"""Pictures as data: the series a chart draws, computed once from the model.

A format draws these (a Mermaid block on GitHub, a bar of blocks in the terminal) and JSON writes
them as they are, so the three cannot disagree. Every number here is one the story's words also
rest on: the memory parts are Mem-Info's, the run-up is the story's timeline, the bars count kills.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from oomtrace.explain import MemoryPicture
from oomtrace.story import TimelineEntry
from oomtrace.units import duration, kib, relative, timeline_clock

# A chart has at most this many bars or events: past it, buckets widen (bars) or the run-up
# keeps the records nearest the kill. A picture of 300 hourly bars says nothing more than 24 do,
# and GitHub refuses a Mermaid block over 50,000 characters.
MAX_POINTS = 24


@dataclass(frozen=True, slots=True)
class Part:
    key: str
    """What the part is, for a format that draws each kind its own way: "anon", "file", "slab",
    "pagetables", "free", "unaccounted" (in no LRU list, slab or page table), "other"."""
    label: str
    kb: int


@dataclass(frozen=True, slots=True)
class ShareChart:
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


@dataclass(frozen=True, slots=True)
class Bars:
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


@dataclass(frozen=True, slots=True)
class Event:
    offset: str
    """"T-3m13s": where it stands against the kill."""
    clock: str
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class RunUp:
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


Chart = ShareChart | Bars | RunUp


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
    """The story's timeline against time; None for a lone kill, which a picture adds nothing to."""
    if len(entries) < 2:
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
    first = entries[0].offset_s
    span = f" over {duration(abs(first))}" if first is not None and first < 0 else ""
    return RunUp(f"The run-up to the kill{span}", events, left_out)


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


def kills_over_time(times: Iterable[datetime]) -> Bars | None:
    """Kills per bucket of time, empty buckets included (a gap is part of the picture)."""
    stamps = sorted(times)
    if len(stamps) < _FEWEST_KILLS or stamps[0] == stamps[-1]:
        return None
    span = stamps[-1] - stamps[0]
    # A span of n widths can touch n + 1 buckets once the first is aligned to the clock.
    fitting = ((n, w) for n, w in _BUCKETS if span / w < MAX_POINTS - 1)
    days = -(-span.days // (MAX_POINTS - 2))
    name, width = next(fitting, (f"{days} days", timedelta(days=days)))
    start = _floor(stamps[0], width)
    counts: Counter[int] = Counter((t - start) // width for t in stamps)
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
    return Bars(
        "OOM kills per host", "host", tuple(h for h, _ in shown), tuple(n for _, n in shown), note
    )


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
