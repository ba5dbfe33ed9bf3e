"""One frozen dataclass per kind of kernel line that matters to an OOM story."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from oomtrace.frozen import Frozen
from oomtrace.records import Record


class Event(Frozen, gc=False):
    """Base: every event keeps the record it came from, so reports can quote it.

    Untracked by the cyclic collector, as records.Record is (see there why): a subclass holds
    only strings, numbers, and mappings and tuples of those."""

    record: Record


class OomInvoked(Event):
    """`X invoked oom-killer: gfp_mask=..., order=N, oom_score_adj=N`: a report begins."""

    comm: str
    gfp_mask: str | None
    """None when a paste cut the line before it (as are the fields after it)."""
    gfp_flags: str | None
    order: int | None
    oom_score_adj: int | None
    nodemask: str | None


class CpusetLine(Event):
    """Pre-4.19 `X cpuset=/ mems_allowed=0-1`, the line after the header."""

    comm: str
    cpuset: str
    mems_allowed: str


class TaskLine(Event):
    """`CPU: N UID: N PID: N Comm: X ... <release>`: who was running when the killer was invoked."""

    cpu: int | None
    pid: int
    uid: int | None
    comm: str
    kernel: str | None


class HardwareName(Event):
    name: str


class CallFrame(Event):
    """One call-trace frame; `module` names a driver such as `nvidia` when it is one."""

    function: str
    module: str | None
    reliable: bool


class MemInfoHeader(Event):
    """`Mem-Info:`: counters in pages follow."""


class SectionTitle(Event):
    """`Call Trace:` or `Tasks state (memory values in pages):`: a line that only titles what
    follows. Nothing is read from it; the report's quote keeps it, since a reader needs it to
    read the frames and the table under it."""


class Counters(Event):
    """A line of `name:value` page counters (the Mem-Info body)."""

    values: Mapping[str, int]


class ZoneLine(Event):
    """`Node N ZONE free:..kB min:..kB low:..kB high:..kB ...`."""

    node: int
    zone: str
    values_kb: Mapping[str, int]


class NodeLine(Event):
    """4.8+ `Node N active_anon:..kB inactive_anon:..kB ...` per-node LRU counters."""

    node: int
    values_kb: Mapping[str, int]


class SwapLine(Event):
    """`Free swap  = NkB` or `Total swap = NkB`."""

    kind: str
    kb: int


class PagesLine(Event):
    """`N pages RAM`, `N pages reserved`, `N total pagecache pages`, ..."""

    kind: str
    count: int


class TasksHeader(Event):
    """The tasks-table header; its columns differ across kernel versions."""

    columns: tuple[str, ...]


class TaskRow(Event):
    """A tasks-table row; split into columns once the header is known."""

    pid: int
    rest: str


class OomKillSummary(Event):
    """4.19+ `oom-kill:constraint=...,global_oom|oom_memcg=...,task_memcg=...,task=...,pid=...`."""

    fields: Mapping[str, str]
    global_oom: bool


class TaskInMemcg(Event):
    """Pre-5.0 `Task in A killed as a result of limit of B`."""

    task_memcg: str
    memcg: str


class MemcgUsage(Event):
    """`memory: usage NkB, limit NkB, failcnt N` (also memory+swap, kmem, swap)."""

    kind: str
    usage_kb: int
    limit_kb: int
    failcnt: int


class MemcgStatsHeader(Event):
    """`Memory cgroup stats for /path:` (3.x kernels put the stats on the same line)."""

    path: str
    inline_kb: Mapping[str, int]


class MemcgStat(Event):
    """A `name value` line of memory cgroup stats (bytes on v2, pages or bytes on v1)."""

    name: str
    value: int


class KillChosen(Event):
    """Pre-5.0 `Out of memory: Kill process N (comm) score N or sacrifice child`."""

    pid: int
    comm: str
    score: int
    memcg: bool


class Killed(Event):
    """`... Killed process N (comm) total-vm:..kB, anon-rss:..kB, ...`: the kill itself."""

    pid: int | None
    """None where the line lost it (2.4's `VM: killing process NAME`, a pid deleted by hand)."""
    comm: str
    uid: int | None
    total_vm_kb: int | None
    anon_rss_kb: int | None
    file_rss_kb: int | None
    shmem_rss_kb: int | None
    pgtables_kb: int | None
    oom_score_adj: int | None
    memcg: bool
    """The line began `Memory cgroup out of memory:`."""
    global_lead: bool = False
    """The line began `Out of memory:` (the kernel says so only of a global OOM)."""
    comm_cut: bool = False
    """The line ends inside the name (or, 2.4, printed no pid): the name may be incomplete."""
    container: str | None = None
    """An OpenVZ / Virtuozzo kill names the container whose limit was hit (`UB 1234`, `VE 101`)."""


class Reaped(Event):
    """`oom_reaper: reaped process N (comm), now anon-rss:..kB, ...`."""

    pid: int
    comm: str
    anon_rss_kb: int
    file_rss_kb: int
    shmem_rss_kb: int


class NoKillable(Event):
    """`Out of memory and no killable processes...`."""


class OomPanic(Event):
    """`Kernel panic - not syncing: Out of memory...` or panic_on_oom."""

    text: str


class CallbacksSuppressed(Event):
    """`oom_kill_process: N callbacks suppressed`: reports were rate-limited away."""

    function: str
    count: int


class Repeats(Event):
    """A line that says a warning came again without saying it: a paste's `NVRM: (repeats)`
    after the NVRM line it repeats (`prefix` "NVRM", once), or a rate limit's
    `warn_alloc: 3 callbacks suppressed` before the warning it let through (`prefix` None)."""

    prefix: str | None
    count: int


class EarlyWarning(Event):
    """A line that often precedes an OOM kill: GPU driver allocation failures, Xids, ..."""

    kind: str
    """The name of its message kind in messages.MESSAGES (`nvrm-no-memory`, ...)."""
    text: str
    key: str
    """What makes two warnings "the same" for collapsing repeats."""


class BootStarted(Event):
    """`Linux version 5.15.0-2-amd64 (...) ...`: the kernel's first line of a boot. The splitter
    starts a boot segment where the uptime goes back; anchored, the line shows a big file's scan
    where each boot begins, which the lines it skips would otherwise hide."""

    release: str


class ProcessCrash(Event):
    """`comm[pid]: segfault at ...`, `traps: comm[pid] general protection ...`: a crash, not an OOM."""

    comm: str
    pid: int
    text: str


class UnitRecord(Event):
    """A systemd record about a unit: an OOM kill in it, its main process killed, a restart."""

    unit: str | None
    """None where the paste lost the unit's name (`journalctl -u x -o cat` prints none)."""
    kind: str
    """"oom-kill" (A process of this unit has been killed by the OOM killer), "main-killed",
    "failed" (Failed with result '...'), "consumed", "restart", "oomd-killed"."""
    detail: str
    """The result, signal, restart count or consumption text, as the record said it."""
    count: int | None = None
    """The restart counter, or the number of processes systemd-oomd killed."""
    peak_kb: int | None = None
    """"memory peak" of a Consumed record."""
    since: str | None = None
    """`systemctl status`'s `since` time of its `Active:` line, as printed (the unit's name is
    in the status's heading above it: messages/units.status_unit)."""


class UserspaceKill(Event):
    """A kill by a userspace OOM killer: systemd-oomd, earlyoom, nohang, Android lmkd."""

    killer: str
    comm: str | None
    pid: int | None
    cgroup: str | None
    """systemd-oomd kills a whole cgroup, not one process."""
    signal: str | None
    reason: str
    rss_kb: int | None = None
    badness: int | None = None
    oom_score_adj: int | None = None
    uid: int | None = None
    trigger: str | None = None
    """Who the kill was made for, where the killer says (lowmemorykiller's `on behalf of`)."""
    trigger_pid: int | None = None
    constraint: str | None = None
    """What limit was hit, where the record says (slurm's cgroup OOM events: memcg)."""
    count: int = 1
    """How many kills the record stands for (the kubelet's events fold repeats: `x4 over 25m`)."""
    at: datetime | None = None
    """When the record itself says the kill happened, where its own text has a time the line's
    prefix lacks or gets wrong (containerd's `time="2023-09-01T19:12:33Z"`, a container's
    `Finished:` joined to its `Reason: OOMKilled`)."""
    at_raw: str | None = None
    """`at` as printed."""
    decided: bool = False
    """A kill decided and not yet known done: systemd-oomd 247 and 248 log the decision before
    they act, and afterwards only a failure (KillFailed); episodes/decisions.py waits for one."""
    cut: bool = False
    """Its line ends where a paste cut it (systemd-oomd's `Killed /…` with no `due to`): a
    wrapped rest joined to it (rejoin.py) completes it."""


class KillFailed(Event):
    """A userspace killer says the kill it decided was not made (systemd-oomd 248: `Failed to
    kill any cgroup(s) under /x based on pressure`; a dry run's `Would have tried to kill`)."""

    killer: str


class ContainerFinished(Event):
    """A container's end as its status prints it (`kubectl describe pod`'s `Finished:     Fri, 15
    Sep 2023 09:56:17 +0200`, `docker inspect`'s `"FinishedAt": "…"`): the time of the OOM kill
    whose `Reason: OOMKilled` came a few lines before, if one did."""

    at: datetime
    raw: str


class ProcessDied(Event):
    """Android ActivityManager's `Process com.x (pid 4563) has died: cch+6CEM`, or Zygote's
    `Process 30364 exited due to signal 9 (Killed)`: a witness of an lmkd kill of the same pid
    just before, never a kill of its own."""

    comm: str | None
    pid: int
    state: str | None
    who: str = "ActivityManager"


class VictimNamed(Event):
    """A userspace killer names the process it chose a few lines before the line of its act,
    which names none (nohang: `PID: 12297, Name: tail, badness: 727`, then `Run the command:
    kill -TERM 12297`)."""

    killer: str
    pid: int
    comm: str
    badness: int | None
