"""A closed draft → an Episode: the rule for each field, or the outline a kept-or-elided kill needs.

The rules for the victim, the constraint and memory live in victim.py, constraint.py and
memory.py; this module puts an episode together and says what the report lacked. It reads the
draft the assembler closed and never regroups lines.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from oomtrace import events as ev
from oomtrace.episodes.constraint import constraint_of, memcgs
from oomtrace.episodes.draft import MAX_RAW_LINES, MAX_REPORT_EVENTS, Draft, ReportEvents
from oomtrace.episodes.memory import mem_info, memcg_stats, page_size, swap
from oomtrace.episodes.moments import moment_of
from oomtrace.episodes.victim import victim_of
from oomtrace.model import Chosen, Episode, Frame, MemcgCounter, Moment, Reap, Trigger, Zone
from oomtrace.services import bare_episode, doubt_of

MAX_FRAMES = 64
# Frames of the OOM killer's own stack dump: a CPU/PID line before them is the trigger's.
_OOM_FRAMES = frozenset(("dump_header", "oom_kill_process", "out_of_memory", "mem_cgroup_out_of_memory"))


class Freezer(ReportEvents):
    """Turns a draft's events into an Episode; `resolve` gives uptimes the wall time of the boot
    times known when it is called."""

    def __init__(self, draft: Draft, resolve: Callable[[Moment], Moment]) -> None:
        super().__init__(draft)
        self.resolve = resolve

    def episode(self, number: int) -> Episode:
        draft = self.draft
        task_line = self.first(ev.TaskLine)
        summary = self.first(ev.OomKillSummary)
        task_in = self.first(ev.TaskInMemcg)
        columns, tasks = self.tasks()
        constraint, constraint_from = constraint_of(self, summary, task_in)
        (memcg, memcg_from), task_memcg = memcgs(self, summary, task_in)
        memory = mem_info(self)
        pages = {e.kind: e.count for e in self.all(ev.PagesLine)}
        zones = tuple(Zone(e.node, e.zone, dict(e.values_kb)) for e in self.all(ev.ZoneLine))
        victim = victim_of(self, summary, tasks)
        page_size_kb, page_size_from = page_size(victim, tasks, memory, zones)
        stats_header = self.first(ev.MemcgStatsHeader)
        kernel = task_line.kernel if isinstance(task_line, ev.TaskLine) else None
        return Episode(
            id=number,
            killer="kernel",
            doubt=doubt_of("kernel", draft.kill.record.sender) if draft.kill is not None else None,
            moment=self.resolve(kill_moment(draft)),
            began=self.resolve(moment_of(draft.events[0].record, draft.seq)),
            host=draft.host,
            trigger=self.trigger(task_line),
            constraint=constraint,
            constraint_from=constraint_from,
            memcg=memcg,
            memcg_from=memcg_from,
            task_memcg=task_memcg,
            victim=victim,
            chosen=Chosen(draft.chosen.pid, draft.chosen.comm, draft.chosen.score) if draft.chosen else None,
            task_columns=columns,
            tasks=tuple(tasks),
            kernel=kernel,
            hardware=h.name if isinstance(h := self.first(ev.HardwareName), ev.HardwareName) else None,
            call_trace=tuple(_frame(e) for e in self.all(ev.CallFrame)[:MAX_FRAMES]),
            mem_info=memory,
            zones=zones,
            node_counters={e.node: dict(e.values_kb) for e in self.all(ev.NodeLine)},
            swap_total_kb=swap(self, "total"),
            swap_free_kb=swap(self, "free"),
            pages=pages,
            page_size_kb=page_size_kb,
            page_size_from=page_size_from,
            memcg_usage=tuple(
                MemcgCounter(e.kind, e.usage_kb, e.limit_kb, e.failcnt) for e in self.all(ev.MemcgUsage)
            ),
            memcg_stats_path=stats_header.path if isinstance(stats_header, ev.MemcgStatsHeader) else None,
            memcg_stats=memcg_stats(self, stats_header),
            reaped=self.reap(),
            no_killable=bool(self.all(ev.NoKillable)),
            panic=p.text if isinstance(p := self.first(ev.OomPanic), ev.OomPanic) else None,
            suppressed_reports=draft.suppressed,
            missing=self.missing(summary, kernel),
            lines=(draft.first_line, draft.last_line),
            raw_lines=tuple(draft.raw_lines),
            trimmed=self.trimmed(len(tasks)),
            table_rows=self.draft.task_rows if self.draft.task_rows > len(tasks) else None,
        )

    def outline(self) -> Episode:
        """What keeping and eliding a kill read of it (when, who, which limit), as the whole
        episode has them; the report's other fields left empty."""
        draft = self.draft
        summary = self.first(ev.OomKillSummary)
        task_in = self.first(ev.TaskInMemcg)
        constraint, _ = constraint_of(self, summary, task_in)
        (memcg, _), task_memcg = memcgs(self, summary, task_in)
        moment = self.resolve(kill_moment(draft))
        # No tasks list: the victim splits only the rows it looks up (most of a deferred
        # report's cost was splitting every row of its table to find one).
        return bare_episode(
            "kernel",
            moment,
            draft.host,
            victim=victim_of(self, summary),
            constraint=constraint,
            memcg=memcg,
            task_memcg=task_memcg,
        )

    def trimmed(self, kept_rows: int) -> tuple[str, ...]:
        draft = self.draft
        notes = []
        if draft.task_rows > kept_rows:
            notes.append(
                f"tasks table: {kept_rows:,} of {draft.task_rows:,} rows kept (those the kernel "
                "ranks highest and the largest by rss)"
            )
        if draft.raw_cut:
            notes.append(f"quoted lines: the first {MAX_RAW_LINES:,} of the report's lines")
        if draft.dropped_events:
            notes.append(
                f"report: {draft.dropped_events:,} lines past the first {MAX_REPORT_EVENTS:,} not read"
            )
        return tuple(notes)

    def trigger(self, task_line: ev.Event | None) -> Trigger | None:
        header = self.draft.header
        if header is None:
            return self._trigger_from_task_line(task_line)
        cpuset = self.first(ev.CpusetLine)
        summary = self.first(ev.OomKillSummary)
        pid = uid = None
        if isinstance(task_line, ev.TaskLine):
            pid, uid = task_line.pid, task_line.uid
        cpuset_value = cpuset.cpuset if isinstance(cpuset, ev.CpusetLine) else None
        mems = cpuset.mems_allowed if isinstance(cpuset, ev.CpusetLine) else None
        if isinstance(summary, ev.OomKillSummary):
            cpuset_value = cpuset_value or summary.fields.get("cpuset")
            mems = mems or summary.fields.get("mems_allowed")
        return Trigger(
            comm=header.comm,
            pid=pid,
            uid=uid,
            gfp_mask=header.gfp_mask,
            gfp_flags=header.gfp_flags,
            order=header.order,
            oom_score_adj=header.oom_score_adj,
            cpuset=cpuset_value,
            mems_allowed=mems,
        )

    def _trigger_from_task_line(self, task_line: ev.Event | None) -> Trigger | None:
        """A report cut before its header still names the task that invoked the killer: the
        `CPU: N PID: N Comm: NAME` line its stack dump begins with (dump_header prints the
        current task's stack). Only where the call trace is the OOM killer's, so that a stack
        of some other warning never names the trigger."""
        if not isinstance(task_line, ev.TaskLine):
            return None
        functions = {e.function.split(".")[0] for e in self.all(ev.CallFrame)}
        if not functions & _OOM_FRAMES:
            return None
        return Trigger(task_line.comm, task_line.pid, task_line.uid, None, None, None, None, None, None)

    def reap(self) -> Reap | None:
        if self.draft.reap is None:
            return None
        event, seq = self.draft.reap
        moment = self.resolve(moment_of(event.record, seq))
        return Reap(event.pid, event.comm, event.anon_rss_kb, event.file_rss_kb, event.shmem_rss_kb, moment)

    def missing(self, summary: ev.Event | None, kernel: str | None) -> tuple[str, ...]:
        draft = self.draft
        missing = []
        if draft.header is None:
            missing.append("header")
        if not self.all(ev.TaskLine) and draft.header is not None:
            missing.append("cpu_line")
        memcg_report = bool(self.all(ev.MemcgUsage)) or bool(self.all(ev.TaskInMemcg))
        if not self.all(ev.MemInfoHeader) and not self.all(ev.Counters) and not memcg_report:
            # A memory cgroup OOM prints the cgroup's usage and stats instead of Mem-Info.
            missing.append("mem_info")
        whole = draft.header is not None and draft.kill is not None
        if not self.all(ev.TasksHeader) and not self.all(ev.TaskRow) and not whole:
            # Between a header and a kill line the table is absent by choice
            # (vm.oom_dump_tasks=0), not cut off.
            missing.append("tasks")
        elif self.all(ev.TaskRow) and not self.all(ev.TasksHeader):
            # A table cut before its header: its columns are named by their count, if at all.
            missing.append("tasks_header")
        if summary is None and kernel is not None and _kernel_at_least(kernel, (4, 19)):
            missing.append("summary")
        if draft.kill is None and not self.all(ev.NoKillable) and not self.all(ev.OomPanic):
            missing.append("kill")
        return tuple(missing)


def kill_moment(draft: Draft) -> Moment:
    """When a report's kill was: its kill line's moment, else its first line's."""
    if draft.kill is not None:
        return moment_of(draft.kill.record, draft.kill_seq)
    first = draft.events[0].record
    return moment_of(first, draft.seq)


def _frame(event: ev.CallFrame) -> Frame:
    return _shared_frame(event.function, event.module, event.reliable)


@functools.lru_cache(maxsize=4096)
def _shared_frame(function: str, module: str | None, reliable: bool) -> Frame:
    """One Frame for each (function, module, reliable): a crash loop's reports print the same
    stack, and a Frame is frozen, so every episode can hold the same one."""
    return Frame(function, module, reliable)


def _kernel_at_least(release: str, version: tuple[int, int]) -> bool:
    parts = release.split(".")
    try:
        return (int(parts[0]), int(parts[1].split("-")[0])) >= version
    except (ValueError, IndexError):
        return False
