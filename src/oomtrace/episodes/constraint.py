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
# Call-trace frames that say which limit was hit, when no summary line says so, per kernel series
# (function names as the unwinder prints them). mm/oom_kill.c was read for 2.6.32, RHEL 6, 3.10,
# 4.19, 5.10 and 6.1 (stored copies named in tests/test_kernel_formats.py); the memcontrol.c,
# page_alloc.c, mempolicy.c and filemap.c names follow those files' history and the real traces in
# tests/realworld, not a reading of each series' file:
#   memcg: mm/memcontrol.c and mm/oom_kill.c. 2.6.32-3.16: mem_cgroup_out_of_memory (oom_kill.c)
#     under __mem_cgroup_try_charge from mem_cgroup_charge_common / mem_cgroup_newpage_charge /
#     mem_cgroup_cache_charge; 2.6.35-3.11 mem_cgroup_handle_oom; 3.12+ (and RHEL 7's 3.10)
#     mem_cgroup_oom / mem_cgroup_oom_synchronize from pagefault_out_of_memory. 3.17-5.7:
#     try_charge under mem_cgroup_try_charge (4.19: mem_cgroup_try_charge_delay), kmem through
#     memcg_kmem_charge (4.4) / __memcg_kmem_charge (4.19, 5.4) / __memcg_kmem_charge_page (5.10).
#     5.8+: mem_cgroup_charge; 5.13+: try_charge_memcg, charge_memcg, __mem_cgroup_charge (5.18+),
#     mem_cgroup_swapin_charge_page (5.15) / _folio (6.1+), obj_cgroup_charge(_pages) (5.10+),
#     obj_cgroup_charge_account (6.x).
#   global: mm/page_alloc.c, mm/mempolicy.c, mm/filemap.c and mm/oom_kill.c. out_of_memory
#     under __alloc_pages_may_oom <- __alloc_pages_slowpath (2.6.31+) <- __alloc_pages_nodemask
#     (2.6.27-5.12; 2.6.27-2.6.30 __alloc_pages_internal) / __alloc_pages (5.13+; _noprof 6.10+),
#     reached from alloc_pages_current (to 5.12) / alloc_pages (5.13+) / alloc_pages_vma (to
#     6.0) / vma_alloc_folio (6.1+) / alloc_pages_mpol (6.7+) / __page_cache_alloc (to 5.15) /
#     filemap_alloc_folio (5.16+); a page fault's pagefault_out_of_memory (2.6.x-5.15: it calls
#     out_of_memory when no memcg handled the fault; 5.16 stopped calling it); sysrq-f's
#     moom_callback (drivers/tty/sysrq.c). A cpuset or mempolicy limit takes the same path:
#     only the summary line tells them apart, so "global" from the trace is inferred, and not
#     said where the header's nodemask or the task's mems_allowed leaves out a node the
#     report's Mem-Info shows (constrained_alloc() in mm/oom_kill.c).
_MEMCG_FRAMES_BY_SERIES = {
    "2.6.32-3.16": (
        "mem_cgroup_out_of_memory",
        "__mem_cgroup_try_charge",
        "mem_cgroup_charge_common",
        "mem_cgroup_newpage_charge",
        "mem_cgroup_cache_charge",
        "mem_cgroup_try_charge_swapin",
        "mem_cgroup_handle_oom",
        "mem_cgroup_oom",
        "mem_cgroup_oom_synchronize",
    ),
    "3.17-5.7": (
        "mem_cgroup_out_of_memory",
        "try_charge",
        "mem_cgroup_try_charge",
        "mem_cgroup_try_charge_delay",
        "mem_cgroup_oom",
        "mem_cgroup_oom_synchronize",
        "memcg_kmem_charge",
        "__memcg_kmem_charge",
        "__memcg_kmem_charge_memcg",
    ),
    "5.8-6.x": (
        "mem_cgroup_out_of_memory",
        "try_charge",
        "try_charge_memcg",
        "charge_memcg",
        "mem_cgroup_charge",
        "__mem_cgroup_charge",
        "mem_cgroup_swapin_charge_page",
        "mem_cgroup_swapin_charge_folio",
        "mem_cgroup_oom",
        "mem_cgroup_oom_synchronize",
        "__memcg_kmem_charge",
        "__memcg_kmem_charge_page",
        "obj_cgroup_charge",
        "obj_cgroup_charge_pages",
        "obj_cgroup_charge_account",
    ),
}
_ALLOCATOR_FRAMES_BY_SERIES = {
    "2.6.32-5.12": (
        "__alloc_pages_internal",
        "__alloc_pages_nodemask",
        "__alloc_pages_slowpath",
        "__alloc_pages_may_oom",
        "alloc_pages_current",
        "alloc_pages_vma",
        "__page_cache_alloc",
        "pagefault_out_of_memory",
        "moom_callback",
    ),
    "5.13-6.x": (
        "__alloc_pages",
        "__alloc_pages_noprof",
        "__alloc_pages_slowpath",
        "__alloc_pages_may_oom",
        "alloc_pages",
        "alloc_pages_noprof",
        "alloc_pages_mpol",
        "alloc_pages_mpol_noprof",
        "alloc_pages_vma",
        "vma_alloc_folio",
        "vma_alloc_folio_noprof",
        "__folio_alloc",
        "__folio_alloc_noprof",
        "folio_alloc",
        "folio_alloc_noprof",
        "__page_cache_alloc",
        "filemap_alloc_folio",
        "filemap_alloc_folio_noprof",
        "pagefault_out_of_memory",
        "moom_callback",
    ),
}
_MEMCG_FRAMES = frozenset(f for frames in _MEMCG_FRAMES_BY_SERIES.values() for f in frames)
_ALLOCATOR_FRAMES = frozenset(f for frames in _ALLOCATOR_FRAMES_BY_SERIES.values() for f in frames)
# The OOM killer's own frames (mm/oom_kill.c, lib/dump_stack.c): a reliable unwinder prints
# them unmarked, so a trace that holds none of them unmarked was printed all `?`.
_OOM_KILLER_FRAMES = frozenset(
    ("dump_stack", "dump_stack_lvl", "dump_header", "oom_kill_process", "out_of_memory")
)
# What `constraint_from` says when the call trace decided: the story quotes it.
FROM_TRACE = "inferred from the call trace"


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
        return from_trace, FROM_TRACE
    report_body = bool(report.all(ev.MemInfoHeader)) or bool(report.all(ev.TasksHeader))
    if draft.header is not None and report_body:
        # 2.6 and 3.x print no constraint; a memcg OOM prints its cgroup's usage instead of
        # Mem-Info. A cpuset or mempolicy OOM looks the same: hence "inferred".
        return "global", "inferred: no memory cgroup lines in the report"
    return None, None


def constraint_from_trace(report: ReportEvents) -> str | None:
    """memcg when the allocation failed charging a cgroup, global when the page allocator
    itself gave up. A frame marked `?` is a stale stack word where the OOM killer's own frames
    are reliable; where they are marked too (kernels before about 4.x without frame pointers
    print every frame so) the marked frames are all there is, and they are read."""
    frames = report.all(ev.CallFrame)
    reliable = [e for e in frames if e.reliable]
    if not any(e.function.split(".")[0] in _OOM_KILLER_FRAMES for e in reliable):
        reliable = frames
    # `__alloc_pages_slowpath.constprop.0`, `out_of_memory.cold`: the compiler's clones.
    functions = {e.function.split(".")[0] for e in reliable}
    if functions & _MEMCG_FRAMES:
        return "memcg"
    if "out_of_memory" in functions and functions & _ALLOCATOR_FRAMES and not _narrowed(report):
        return "global"
    return None


def _narrowed(report: ReportEvents) -> bool:
    """The header's nodemask (4.9-4.18) or the task's mems_allowed leaves out a node the report's
    Mem-Info shows: constrained_alloc() may have said CONSTRAINT_MEMORY_POLICY or
    CONSTRAINT_CPUSET, and the trace cannot tell which."""
    nodes = {e.node for e in report.all(ev.ZoneLine)} | {e.node for e in report.all(ev.NodeLine)}
    if not nodes:
        return False
    header = report.draft.header
    masks = [header.nodemask] if isinstance(header, ev.OomInvoked) and header.nodemask else []
    masks += [e.mems_allowed for e in report.all(ev.CpusetLine)]
    for mask in masks:
        allowed = _node_list(mask)
        if allowed is not None and not nodes <= allowed:
            return True
    return False


def _node_list(text: str) -> set[int] | None:
    """`0-1,3` as the kernel's %*pbl prints a nodemask; None for `(null)` or what is not a list."""
    nodes: set[int] = set()
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()) or len(low) > 4 or len(high) > 4:
            return None  # MAX_NUMNODES is 1024: a longer number is not a node
        nodes.update(range(int(low), int(high or low) + 1))
    return nodes


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
