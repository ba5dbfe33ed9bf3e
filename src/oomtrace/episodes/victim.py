"""Which task a report killed: the kill line's, its gaps filled from the summary and the tasks table."""

from __future__ import annotations

from collections.abc import Mapping

from oomtrace import events as ev
from oomtrace.episodes.draft import ReportEvents
from oomtrace.model import Victim


def victim_of(
    report: ReportEvents, summary: ev.Event | None, tasks: list[dict[str, int | str]] | None = None
) -> Victim | None:
    """The killed task: from the kill line, its gaps filled from the summary and the tasks
    table (each marked); without a kill line, the summary's or the chosen task, marked so.
    `tasks` is the split table where the caller has it; without it the rows are split as
    the lookups need them (the same Victim either way)."""
    kill = report.draft.kill
    fields = summary.fields if isinstance(summary, ev.OomKillSummary) else {}
    summary_pid = int(fields["pid"]) if fields.get("pid", "").isdigit() else None
    if kill is None:
        return _victim_without_kill(report, fields, summary_pid, tasks)
    pid, pid_from = kill.pid, None
    if pid is None and summary_pid is not None:
        pid, pid_from = summary_pid, "oom-kill summary"
    # The row fills only what the kill line lacks: looked up then alone (a crash loop's kill
    # lines lack nothing, and splitting the victim's row, new each time, was 3 % of `list`).
    uid_missing = kill.uid is None and not fields.get("uid", "").isdigit()
    lacks = kill.comm_cut or kill.oom_score_adj is None or uid_missing
    row = report.row_of(pid, tasks) if pid is not None and lacks else None
    if pid is None and kill.comm and not kill.comm_cut:
        rows = [r for r in (tasks if tasks is not None else report.tasks()[1]) if r.get("name") == kill.comm]
        if len(rows) == 1:
            row = rows[0]
            pid, pid_from = int(row["pid"]), "tasks table (by name)"
    comm, comm_from = kill.comm, None
    if kill.comm_cut:
        fuller = fields.get("task") if summary_pid == pid and pid is not None else None
        if fuller and fuller.startswith(comm):
            comm, comm_from = fuller, "oom-kill summary"
        elif row is not None and str(row.get("name", "")).startswith(comm) and row.get("name"):
            comm, comm_from = str(row["name"]), "tasks table"
    adj, adj_from = kill.oom_score_adj, "kill line"
    if adj is None and row is not None:
        adj, row_adj_from = row_adj(row)
        adj_from = row_adj_from or adj_from
    uid = kill.uid
    if uid is None and fields.get("uid", "").isdigit():
        uid = int(fields["uid"])
    if uid is None and row is not None and isinstance(row.get("uid"), int):
        uid = int(row["uid"])
    return Victim(
        comm=comm,
        pid=pid,
        uid=uid,
        total_vm_kb=kill.total_vm_kb,
        anon_rss_kb=kill.anon_rss_kb,
        file_rss_kb=kill.file_rss_kb,
        shmem_rss_kb=kill.shmem_rss_kb,
        pgtables_kb=kill.pgtables_kb,
        oom_score_adj=adj,
        oom_score_adj_from=adj_from if adj is not None else None,
        comm_from=comm_from,
        pid_from=pid_from,
    )


def _victim_without_kill(
    report: ReportEvents,
    fields: Mapping[str, str],
    summary_pid: int | None,
    tasks: list[dict[str, int | str]] | None,
) -> Victim | None:
    chosen = report.draft.chosen
    if summary_pid is not None and fields.get("task"):
        comm, pid, source = fields["task"], summary_pid, "oom-kill summary (no kill line)"
    elif chosen is not None:
        comm, pid, source = chosen.comm, chosen.pid, "the task the kernel chose (no kill line)"
    else:
        return None
    row = report.row_of(pid, tasks)
    adj, adj_from = row_adj(row) if row is not None else (None, None)
    uid = int(fields["uid"]) if fields.get("uid", "").isdigit() else None
    return Victim(
        comm=comm,
        pid=pid,
        uid=uid,
        total_vm_kb=None,
        anon_rss_kb=None,
        file_rss_kb=None,
        shmem_rss_kb=None,
        pgtables_kb=None,
        oom_score_adj=adj,
        oom_score_adj_from=adj_from,
        comm_from=source,
        pid_from=source,
    )


def row_adj(row: Mapping[str, int | str]) -> tuple[int | None, str | None]:
    """The adj in a task's row: its column, or in a row whose header was cut off the last number
    (every kernel since 2.6.36 ends the table with `oom_score_adj name`)."""
    adj = row.get("oom_score_adj")
    if isinstance(adj, int):
        return adj, "tasks table"
    numbered = sorted((int(k[3:]), v) for k, v in row.items() if k.startswith("col") and k[3:].isdigit())
    if len(numbered) >= 6 and isinstance(numbered[-1][1], int):
        return numbered[-1][1], "tasks table (header cut off: its last number)"
    return None, None
