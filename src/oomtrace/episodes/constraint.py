"""Which limit a report hit (global, a memory cgroup, a cpuset, a mempolicy) and the line that says so."""

from __future__ import annotations

import difflib

from oomtrace import events as ev
from oomtrace.episodes.draft import ReportEvents

_CONSTRAINTS = {
    "CONSTRAINT_NONE": "global",
    "CONSTRAINT_MEMCG": "memcg",
    "CONSTRAINT_CPUSET": "cpuset",
    "CONSTRAINT_MEMORY_POLICY": "mempolicy",
}
# Call-trace frames that say which limit was hit, when no summary line says so.
_MEMCG_FRAMES = frozenset(
    (
        "mem_cgroup_out_of_memory",
        "try_charge",
        "try_charge_memcg",
        "mem_cgroup_oom_synchronize",
        "mem_cgroup_oom",
    )
)
_ALLOCATOR_FRAMES = frozenset(("__alloc_pages_slowpath", "__alloc_pages_may_oom", "__alloc_pages_nodemask"))


def constraint_of(
    report: ReportEvents, summary: ev.Event | None, task_in: ev.Event | None
) -> tuple[str | None, str | None]:
    if isinstance(summary, ev.OomKillSummary):
        value = summary.fields.get("constraint")
        if value in _CONSTRAINTS:
            return _CONSTRAINTS[value], "oom-kill summary"
        close = difflib.get_close_matches((value or "").strip().upper(), _CONSTRAINTS, n=1, cutoff=0.85)
        if close:
            return _CONSTRAINTS[close[0]], f"oom-kill summary (read {value!r} as {close[0]})"
        if summary.global_oom:
            return "global", "oom-kill summary"
        if "oom_memcg" in summary.fields:
            return "memcg", "oom-kill summary"
    draft = report.draft
    if draft.kill is not None and draft.kill.container is not None:
        return "memcg", "kill line (OpenVZ container)"
    memcg_signs = (
        task_in is not None
        or bool(report.all(ev.MemcgUsage))
        or bool(report.all(ev.MemcgStatsHeader))
        or (draft.kill is not None and draft.kill.memcg)
        or (draft.chosen is not None and draft.chosen.memcg)
    )
    if memcg_signs:
        return "memcg", "memory cgroup lines"
    if draft.kill is not None and draft.kill.global_lead:
        return "global", "kill line prefix"
    if draft.chosen is not None and draft.chosen.record.message.lstrip().lower().startswith("out of memory"):
        return "global", "kill line prefix"
    from_trace = constraint_from_trace(report)
    if from_trace is not None:
        return from_trace, "call trace (inferred)"
    report_body = bool(report.all(ev.MemInfoHeader)) or bool(report.all(ev.TasksHeader))
    if draft.header is not None and report_body:
        # 2.6 and 3.x print no constraint; a memcg OOM prints its cgroup's usage instead of
        # Mem-Info. A cpuset or mempolicy OOM looks the same: hence "inferred".
        return "global", "inferred: no memory cgroup lines in the report"
    return None, None


def constraint_from_trace(report: ReportEvents) -> str | None:
    """memcg when the allocation failed charging a cgroup, global when the page allocator
    itself gave up; frames marked `?` are stale stack words, never counted."""
    # `__alloc_pages_slowpath.constprop.0`: the compiler's clone of the same function.
    functions = {e.function.split(".")[0] for e in report.all(ev.CallFrame) if e.reliable}
    if functions & _MEMCG_FRAMES:
        return "memcg"
    if "out_of_memory" in functions and functions & _ALLOCATOR_FRAMES:
        return "global"
    return None


def memcgs(
    report: ReportEvents, summary: ev.Event | None, task_in: ev.Event | None
) -> tuple[tuple[str | None, str | None], str | None]:
    """((the limited cgroup, the line that named it), the victim's cgroup)."""
    memcg = memcg_and_source(report, summary, task_in)
    task_memcg = summary.fields.get("task_memcg") if isinstance(summary, ev.OomKillSummary) else None
    if isinstance(task_in, ev.TaskInMemcg):
        task_memcg = task_memcg or task_in.task_memcg
    return memcg, task_memcg


def memcg_and_source(
    report: ReportEvents, summary: ev.Event | None, task_in: ev.Event | None
) -> tuple[str | None, str | None]:
    if isinstance(summary, ev.OomKillSummary) and summary.fields.get("oom_memcg"):
        return summary.fields["oom_memcg"], "oom-kill summary"
    if isinstance(task_in, ev.TaskInMemcg):
        return task_in.memcg, "Task in line"
    kill = report.draft.kill
    if kill is not None and kill.container is not None:
        return kill.container, "kill line (OpenVZ container)"
    stats = report.first(ev.MemcgStatsHeader)
    if isinstance(stats, ev.MemcgStatsHeader):
        # Only a memory cgroup OOM prints cgroup stats, the limited cgroup's first.
        return stats.path, "memory cgroup stats (inferred)"
    return None, None
