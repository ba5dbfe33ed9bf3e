"""Memory at the kill in one picture: RAM's parts, the watermark, the cgroup's usage, and what they say.

Pure, from one episode (and the report before it of the same cgroup); explain.py re-exports it.
"""

from __future__ import annotations

from collections.abc import Mapping

from oomtrace.frozen import Frozen
from oomtrace.model import Episode
from oomtrace.units import clock, kib

# Memory in no LRU list, slab or page table above this share of RAM is worth a paragraph.
_UNACCOUNTED_SHARE = 0.25
_UNACCOUNTED_MIN_KB = 4 * 1024 * 1024


class MemoryPicture(Frozen):
    """Memory at the kill, in KiB, from Mem-Info and the zone lines (or the memcg counters)."""

    ram_kb: int | None
    free_kb: int | None
    min_watermark_kb: int | None
    anon_kb: int | None
    file_kb: int | None
    shmem_kb: int | None
    slab_kb: int | None
    pagetables_kb: int | None
    swap_total_kb: int | None
    swap_free_kb: int | None
    unaccounted_kb: int | None
    """RAM in no LRU list, slab or page table: kernel and driver allocations (GPU buffers)."""
    memcg_usage_kb: int | None
    memcg_limit_kb: int | None
    memcg_failcnt: int | None
    """The cgroup's failcnt: how often its usage hit the limit since the cgroup was made (v1)."""
    notes: tuple[str, ...]
    memcg_failcnt_before: int | None = None
    """failcnt at the previous report of the same cgroup in the log, if there is one."""


def memory_picture(episode: Episode, previous: Episode | None = None) -> MemoryPicture | None:
    """`previous` is the report before this one of the same cgroup: its failcnt shows this
    kill's share of the cgroup's lifetime count."""
    info = episode.mem_info
    page = episode.page_size_kb
    memcg = next((c for c in episode.memcg_usage if c.kind == "memory"), None)
    if not info and memcg is None:
        return _zones_alone(episode)

    def pages(*names: str) -> int | None:
        present = [info[n] for n in names if n in info]
        return sum(present) * page if present else None

    ram_pages = episode.pages.get("ram")
    reserved = episode.pages.get("reserved", 0)
    ram_kb = (ram_pages - reserved) * page if ram_pages else None
    free_kb = pages("free")
    anon_kb = pages("active_anon", "inactive_anon")
    file_kb = pages("active_file", "inactive_file")
    slab_kb = pages("slab_reclaimable", "slab_unreclaimable")
    pagetables_kb = pages("pagetables")
    unaccounted = None
    if ram_kb and free_kb is not None and anon_kb is not None and file_kb is not None:
        known = free_kb + anon_kb + file_kb + (slab_kb or 0) + (pagetables_kb or 0)
        known += pages("unevictable", "isolated_anon", "isolated_file", "kernel_misc_reclaimable") or 0
        unaccounted = max(ram_kb - known, 0)
    min_watermark = sum(z.values_kb.get("min", 0) for z in episode.zones) or None
    zone_free = sum(z.values_kb.get("free", 0) for z in episode.zones) or None
    before = next((c for c in previous.memcg_usage if c.kind == "memory"), None) if previous else None
    notes = _memory_notes(
        episode,
        ram_kb,
        free_kb if free_kb is not None else zone_free,
        min_watermark,
        file_kb,
        unaccounted,
        (before.failcnt, previous) if before is not None and previous is not None else None,
    )
    return MemoryPicture(
        ram_kb=ram_kb,
        free_kb=free_kb if free_kb is not None else zone_free,
        min_watermark_kb=min_watermark,
        anon_kb=anon_kb,
        file_kb=file_kb,
        shmem_kb=pages("shmem"),
        slab_kb=slab_kb,
        pagetables_kb=pagetables_kb,
        swap_total_kb=episode.swap_total_kb,
        swap_free_kb=episode.swap_free_kb,
        unaccounted_kb=unaccounted,
        memcg_usage_kb=memcg.usage_kb if memcg else None,
        memcg_limit_kb=memcg.limit_kb if memcg else None,
        memcg_failcnt=memcg.failcnt if memcg else None,
        notes=notes,
        memcg_failcnt_before=before.failcnt if before is not None else None,
    )


def _memory_notes(
    episode: Episode,
    ram_kb: int | None,
    free_kb: int | None,
    min_watermark_kb: int | None,
    file_kb: int | None,
    unaccounted_kb: int | None,
    before: tuple[int, Episode] | None = None,
) -> tuple[str, ...]:
    notes = []
    memcg = next((c for c in episode.memcg_usage if c.kind == "memory"), None)
    if memcg is not None and memcg.limit_kb and memcg.usage_kb >= memcg.limit_kb * 0.98:
        notes.append(
            f"the cgroup was at its limit: {kib(memcg.usage_kb)} used of {kib(memcg.limit_kb)}"
            + _failcnt_words(memcg.failcnt, before)
        )
    if free_kb is not None and min_watermark_kb and free_kb <= min_watermark_kb * 1.1:
        notes.append(
            f"free memory {kib(free_kb)} was at the min watermark ({kib(min_watermark_kb)}): "
            "the kernel could not satisfy the allocation"
        )
    if ram_kb and file_kb is not None and file_kb < ram_kb * 0.01:
        notes.append(f"page cache was down to {kib(file_kb)}: nothing was left to reclaim")
    if ram_kb and unaccounted_kb and unaccounted_kb > max(ram_kb * _UNACCOUNTED_SHARE, _UNACCOUNTED_MIN_KB):
        share = 100 * unaccounted_kb / ram_kb
        driver = _gpu_driver_seen(episode)
        where = (
            "with the NVIDIA driver in the report, most likely CUDA allocations"
            if driver
            else "on a unified-memory GPU machine (GB10, Grace, Jetson), that is where CUDA allocations live"
        )
        notes.append(
            f"{kib(unaccounted_kb)} ({share:.0f}% of RAM) was in no LRU list, slab or page table, so in "
            f"no process's RSS: {where}, which RSS and nvidia-smi never show"
        )
    return tuple(notes)


# A zone whose size the log does not give is drained at this little page cache.
_DRAINED_ZONE_KB = 1024


def _zones_alone(episode: Episode) -> MemoryPicture | None:
    """Memory where the log holds zone lines but no Mem-Info (a write-up quoting one `Node 0
    Normal free:...` line): what those zones say, and nothing of the machine's other zones."""
    drained = [z for z in episode.zones if z.zone != "DMA" and _zone_drained(z.values_kb)]
    if not drained:
        return None
    named = ", ".join(f"Node {z.node} {z.zone}" for z in drained)
    files = "; ".join(
        f"active_file {kib(z.values_kb['active_file'])}, inactive_file {kib(z.values_kb['inactive_file'])}"
        for z in drained
    )
    one = len(drained) == 1
    zones, which = ("zone", "one zone") if one else ("zones", "these zones")
    note = (
        f"the page cache was drained in {zones} {named} ({files}): nothing was left to reclaim "
        f"there; the log holds no Mem-Info, so this is {which}, not the whole machine"
    )
    return MemoryPicture(
        ram_kb=None,
        free_kb=None,
        min_watermark_kb=None,
        anon_kb=None,
        file_kb=None,
        shmem_kb=None,
        slab_kb=None,
        pagetables_kb=None,
        swap_total_kb=None,
        swap_free_kb=None,
        unaccounted_kb=None,
        memcg_usage_kb=None,
        memcg_limit_kb=None,
        memcg_failcnt=None,
        notes=(note,),
    )


def _zone_drained(values: Mapping[str, int]) -> bool:
    """A zone's file pages under 1% of what it manages, or, where the line is cut before its
    size, under _DRAINED_ZONE_KB. (A DMA zone holds a few MiB and no cache: never a finding.)"""
    if "active_file" not in values or "inactive_file" not in values:
        return False
    file_kb = values["active_file"] + values["inactive_file"]
    size = values.get("managed") or values.get("present")
    if size:
        return file_kb < size * 0.01
    return file_kb < _DRAINED_ZONE_KB


def _failcnt_words(failcnt: int, before: tuple[int, Episode] | None) -> str:
    """failcnt counts since the cgroup was made, not this kill: say so, and what changed since
    the cgroup's report before this one where the log holds it."""
    if not failcnt:
        # cgroup v2 kernels print failcnt 0: the counter is v1's, not a count of none.
        return ""
    words = f" (failcnt {failcnt:,}: the times it hit the limit since the cgroup was made"
    if before is not None:
        earlier, report = before
        if earlier <= failcnt:
            words += f"; {failcnt - earlier:,} since its report at {clock(report.moment)}"
        else:
            words += f"; lower than at its report at {clock(report.moment)}, so the cgroup was made anew"
    return words + ")"


def _gpu_driver_seen(episode: Episode) -> bool:
    if any(f.module and f.module.startswith("nvidia") for f in episode.call_trace):
        return True
    hardware = (episode.hardware or "").lower()
    return "nvidia" in hardware or "nvidia" in (episode.kernel or "").lower()
