"""What memory looked like in a report: Mem-Info counters, swap, a memory cgroup's stats, the page size."""

from __future__ import annotations

from oomtrace import events as ev
from oomtrace.episodes.draft import ReportEvents
from oomtrace.model import Victim, Zone


def mem_info(report: ReportEvents) -> dict[str, int]:
    values: dict[str, int] = {}
    seen_header = False
    for event in report.draft.events:
        if isinstance(event, ev.MemInfoHeader):
            seen_header = True
        elif isinstance(event, ev.Counters) and (seen_header or not values):
            values.update(event.values)
    return values


def swap(report: ReportEvents, kind: str) -> int | None:
    for event in report.all(ev.SwapLine):
        assert isinstance(event, ev.SwapLine)
        if event.kind == kind:
            return event.kb
    return None


def memcg_stats(report: ReportEvents, header: ev.Event | None) -> dict[str, int]:
    stats: dict[str, int] = {}
    if isinstance(header, ev.MemcgStatsHeader):
        stats.update({f"{k}_kb": v for k, v in header.inline_kb.items()})
    for event in report.all(ev.MemcgStat):
        assert isinstance(event, ev.MemcgStat)
        stats[event.name] = event.value
    return stats


_PAGE_SIZES = (4, 8, 16, 64)


def _nearest_page_size(ratio: float) -> int | None:
    for size in _PAGE_SIZES:
        if abs(ratio - size) <= size * 0.1:
            return size
    return None


def page_size(
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
