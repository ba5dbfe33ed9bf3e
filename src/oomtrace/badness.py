"""Why this victim: the kernel's badness recomputed for every row of the tasks table."""

from __future__ import annotations

from collections.abc import Mapping

from oomtrace.frozen import Frozen
from oomtrace.model import Episode

# oom_score_adj -1000 exempts a task; pid 1 is never chosen either.
_UNKILLABLE_ADJ = -1000
# memcg limits printed as "unlimited" are this large (PAGE_COUNTER_MAX in kB and friends).
_UNLIMITED_KB = 1 << 50


class Candidate(Frozen):
    """One tasks-table row, scored as oom_badness() scores it."""

    pid: int
    name: str
    rss_pages: int
    swap_pages: int
    pgtables_pages: int
    oom_score_adj: int
    points: int
    """rss + swap entries + page-table pages: the size part of the score."""
    score: int
    """points + oom_score_adj × total pages / 1000: what the kernel compares."""


class Ranking(Frozen):
    formula: str
    total_pages: int | None
    """RAM + swap (global) or the cgroup's limit (memcg), the base of the adj term."""
    candidates: tuple[Candidate, ...]
    """Killable rows, highest score first."""
    victim: Candidate | None
    victim_rank: int | None
    top_without_adj: Candidate | None
    """Who the largest task was by size alone: differs from the victim when adj decided."""
    printed_score: int | None
    """The score a pre-5.x kernel printed ("score 651"), 0-1000."""
    recomputed_score: int | None
    """Our score normalised the way that kernel printed it, to check the formula."""


def rank(episode: Episode) -> Ranking | None:
    """Rank every killable task by badness; None without a tasks table or a victim, or where its
    columns are not named (a table cut before its header, of a layout its count does not tell)."""
    if not episode.tasks or episode.victim is None or not columns_named(episode):
        return None
    page_kb = episode.page_size_kb
    total = _total_pages(episode)
    columns = set(episode.task_columns)
    candidates = []
    for row in episode.tasks:
        candidate = score_row(row, columns, page_kb, total)
        if candidate is not None:
            candidates.append(candidate)
    if not candidates:
        return None
    candidates.sort(key=lambda c: (c.score, c.points), reverse=True)
    victim_pid = episode.victim.pid
    victim = next((c for c in candidates if c.pid == victim_pid), None)
    rank_of = next((i for i, c in enumerate(candidates, start=1) if c.pid == victim_pid), None)
    top_without_adj = max(candidates, key=lambda c: c.points)
    printed = episode.chosen.score if episode.chosen else None
    recomputed = None
    if printed is not None and total and episode.chosen:
        chosen = next((c for c in candidates if c.pid == episode.chosen.pid), None)
        if chosen is not None:
            recomputed = max(chosen.score * 1000 // total, 1)
    return Ranking(
        formula=_formula(columns),
        total_pages=total,
        candidates=tuple(candidates),
        victim=victim,
        victim_rank=rank_of,
        top_without_adj=top_without_adj,
        printed_score=printed,
        recomputed_score=recomputed,
    )


def columns_named(episode: Episode) -> bool:
    """Are the tasks table's columns named, by its header or by their count (parse.TABLE_LAYOUTS)?"""
    return len(episode.task_columns) > 1


def _int(row: Mapping[str, int | str], key: str) -> int:
    value = row.get(key)
    return value if isinstance(value, int) else 0


def rss_pages(row: Mapping[str, int | str]) -> int:
    """A tasks-table row's resident pages: its `rss`, or the sum of the parts newer kernels print."""
    rss = row.get("rss")
    if isinstance(rss, int):
        return rss
    return sum(_int(row, column) for column in ("rss_anon", "rss_file", "rss_shmem"))


def score_row(
    row: Mapping[str, int | str], columns: set[str], page_kb: int, total: int | None
) -> Candidate | None:
    """The row scored as oom_badness() scores it; None for a task the kernel never kills."""
    adj = _int(row, "oom_score_adj")
    pid = _int(row, "pid")
    if adj == _UNKILLABLE_ADJ or pid == 1:
        return None
    rss = rss_pages(row)
    if "pgtables_bytes" in columns:
        pgtables = _int(row, "pgtables_bytes") // (page_kb * 1024)
    else:
        pgtables = _int(row, "nr_ptes") + _int(row, "nr_pmds")
    swap = _int(row, "swapents")
    points = rss + swap + pgtables
    score = points + (adj * (total // 1000) if total else 0)
    return Candidate(pid, str(row.get("name", "")), rss, swap, pgtables, adj, points, score)


def _formula(columns: set[str]) -> str:
    table = "pgtables_bytes / page size" if "pgtables_bytes" in columns else "nr_ptes (+ nr_pmds)"
    return f"rss + swapents + {table} + oom_score_adj × (total pages / 1000)"


def _total_pages(episode: Episode) -> int | None:
    page_kb = episode.page_size_kb
    if episode.constraint == "memcg":
        limits = {c.kind: c.limit_kb for c in episode.memcg_usage}
        memory = limits.get("memory")
        if memory is None or memory >= _UNLIMITED_KB:
            return None
        # mem_cgroup_get_max(): the limit plus the swap the cgroup may use, capped by the
        # machine's swap, which a memcg report does not print.
        total_kb = memory
        memsw = limits.get("memory+swap")
        swap = limits.get("swap")
        if memsw is not None and memsw < _UNLIMITED_KB:
            return max(memsw, memory) // page_kb
        if swap is not None and swap < _UNLIMITED_KB:
            return (total_kb + swap) // page_kb
        if any(isinstance(row.get("swapents"), int) and row["swapents"] for row in episode.tasks):
            return None  # swap in use, its size unknown: the adj term cannot be recomputed
        return total_kb // page_kb
    ram = episode.pages.get("ram")
    if not ram:
        return None
    managed = ram - episode.pages.get("reserved", 0)
    return managed + (episode.swap_total_kb or 0) // page_kb
