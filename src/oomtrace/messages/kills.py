"""The kernel's kill and what follows it: the kill line of every generation, the summary, the reaper.

Also the task chosen before the kill (pre-5.0), OpenVZ / Virtuozzo container kills, and the
ends an OOM may have instead (nothing killable, a panic). Each kind beside its matcher.
"""

from __future__ import annotations

from oomtrace import events as ev
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages.kind import MessageKind, kb_values
from oomtrace.records import Record


def _oom_kill(record: Record, text: str) -> ev.Event | None:
    if not text.startswith("oom-kill:"):
        return None
    fields: dict[str, str] = {}
    global_oom = False
    last = None
    for item in text[len("oom-kill:") :].split(","):
        key, sep, value = item.partition("=")
        if sep:
            # Lower-case: a retyped paste says `cOnstraint=`; the kernel prints every key so.
            last = key.strip().lower()
            fields[last] = value
        elif item.strip() == "global_oom":
            global_oom = True
        elif item.strip().strip(".…") == "" and item.strip():
            # `constraint=CONSTRAINT_NONE,...,global_oom`: the writer's cut, not a value's rest.
            last = None
        elif last is not None:
            # mems_allowed=0,2 and cpuset lists hold commas of their own.
            fields[last] += "," + item
    return ev.OomKillSummary(record, fields, global_oom)


OOM_KILL_SUMMARY = MessageKind(
    "oom-kill-summary",
    ("oom-kill:",),
    _oom_kill,
    "the one-line summary of the kill (4.19+)",
    "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
    "task_memcg=/user.slice,task=llama-server,pid=1966928,uid=1000",
    begins=("oom-kill:",),
)


# `Out of memory` as 2.4 to 7.x print it (and 2.4's `Out of Memory`), with the task-selection
# note some kernels add: `Out of memory (oom_kill_allocating_task): `. The chosen task's line:
# 2.6.32's `kill process %d (%s) score %li or a child`, 2.6.34-mm's `Kill process %d (%s) with
# score %d or sacrifice child`, 2.6.36-4.19's `Kill process %d (%s) score %d or sacrifice child`.
_OUT_OF = r"(?:Memory cgroup out of memory|[Oo]ut of [Mm]emory(?: \([\w ]+\))?)"
_KILL_CHOSEN = lazy_compile(
    rf"(?P<lead>{_OUT_OF}: )?"
    r"[Kk]ill process (?P<pid>\d{1,20}) \((?P<comm>.*)\) (?:with )?score (?P<score>\d{1,20})"
    r" or (?:sacrifice child|a child)"
)


def _kill_chosen(record: Record, text: str) -> ev.Event | None:
    match = _KILL_CHOSEN.match(text)
    if not match:
        return None
    memcg = bool(match["lead"]) and match["lead"].startswith("Memory cgroup")
    return ev.KillChosen(record, int(match["pid"]), match["comm"], int(match["score"]), memcg)


KILL_CHOSEN = MessageKind(
    "kill-chosen",
    ("ill process",),
    _kill_chosen,
    "the task the kernel chose (pre-5.0)",
    "Out of memory: Kill process 6576 (mysqld) score 651 or sacrifice child",
    begins=("Memory cgroup out of memory", "Out of memory", "Kill process"),
)


# The kill line of every generation: `Killed process N (comm) total-vm:..kB, ...` (2.6.36-7.x;
# 2.6.33-2.6.35 `vsz:..kB` for total-vm, 2.6.32 `Killed process N (comm)` alone),
# RHEL 7's `Killed process N (comm), UID N, total-vm:...`, RHEL 6's `Killed process N, UID N,
# (comm)`, 2.4's `Out of Memory: Killed process N (comm).`; the pid may have been deleted by
# hand (`Killed process XXXX`) and the line cut anywhere, even inside the name.
_KILLED = lazy_compile(
    rf"(?P<lead>{_OUT_OF}: )?Killed process (?P<pid>\d{{1,20}}(?![\d\w])|[^\s(,]*)"
    r"(?:, UID (?P<uid>\d{1,20}),)? ?\("
)
# What may follow the name's `)`; a cut line may end inside the word (`(rms) total-v`).
_KILLED_NAME_END = lazy_compile(r"\)(?=,? ?(?:UID|total|vsz|anon|file|shmem|pgtables|score)|[.,]?\s*$)")
_KILLED_UID = lazy_compile(r"UID:?\s*(\d{1,20})")
_KILLED_ADJ = lazy_compile(r"oom_score_adj:\s*(-?\d{1,20})")


def _killed(record: Record, text: str) -> ev.Event | None:
    match = _KILLED.match(text)
    if not match:
        return None
    after = text[match.end() :]
    # The last `)` that ends the name (names may hold parentheses of their own).
    ends = list(_KILLED_NAME_END.finditer(after))
    if ends:
        comm, rest, cut = after[: ends[-1].start()], after[ends[-1].end() :], False
    else:
        comm, rest, cut = after.rstrip(), "", True
    sizes = kb_values(rest)
    uid = match["uid"] or (m.group(1) if (m := _KILLED_UID.search(rest)) else None)
    adj = _KILLED_ADJ.search(rest)
    lead = match["lead"] or ""
    return ev.Killed(
        record,
        pid=int(match["pid"]) if match["pid"].isdigit() else None,
        comm=comm,
        uid=int(uid) if uid is not None else None,
        # 2.6.33-2.6.35 printed total-vm as `vsz:`.
        total_vm_kb=sizes.get("total-vm", sizes.get("vsz")),
        anon_rss_kb=sizes.get("anon-rss"),
        file_rss_kb=sizes.get("file-rss"),
        shmem_rss_kb=sizes.get("shmem-rss"),
        pgtables_kb=sizes.get("pgtables"),
        oom_score_adj=int(adj.group(1)) if adj else None,
        memcg=lead.startswith("Memory cgroup"),
        global_lead=bool(lead) and not lead.startswith("Memory cgroup"),
        comm_cut=cut,
    )


KILL = MessageKind(
    "kill",
    ("Killed process",),
    _killed,
    "the kill",
    "Out of memory: Killed process 1966928 (llama-server) total-vm:164222812kB, anon-rss:31651260kB, "
    "file-rss:8420kB, shmem-rss:0kB, UID:1000 pgtables:63896kB oom_score_adj:200",
    begins=(
        "Memory cgroup out of memory",
        "Out of memory",
        "Out of Memory",
        "out of memory",
        "Killed process",
    ),
)


_VM_KILLING = lazy_compile(r"VM: killing process (?P<comm>\S.*?)\s*$")


def _vm_killing(record: Record, text: str) -> ev.Event | None:
    """2.4's `VM: killing process NAME`: the kill, with neither pid nor sizes."""
    match = _VM_KILLING.match(text)
    if not match:
        return None
    return ev.Killed(
        record, None, match["comm"], None, None, None, None, None, None, None, memcg=False, comm_cut=False
    )


VM_KILLING = MessageKind(
    "vm-killing",
    ("VM: killing process",),
    _vm_killing,
    "the kill (2.4 kernels)",
    "VM: killing process mysqld",
    begins=("VM: killing process",),
)


# OpenVZ / Virtuozzo kernels kill inside a container (a user beancounter) at its limit:
# `Out of memory in UB 1234: OOM killed process 21738 (php-cgi) score 0 vm:281988kB, rss:17004kB,
# swap:0kB` (RHEL 6 based), `OOM killed process httpd (pid=2201, ve=101) exited, free=...` (2.6.18).
_UB_KILLED = lazy_compile(
    r"(?:Out of memory in UB (?P<ub>[^:\s]+): )?OOM killed process (?P<pid>\d{1,20}) \((?P<comm>.*?)\)"
    r"(?= score| vm:|,|\s*$| \(ub)"
)
_VE_KILLED = lazy_compile(r"OOM killed process (?P<comm>.+?) \(pid=(?P<pid>\d{1,20}), ve=(?P<ve>\d{1,20})\)")
_UB_IN_REST = lazy_compile(r"\(ub (?P<ub>[^)\s]+)\)")


def _container_killed(record: Record, text: str) -> ev.Event | None:
    """An OpenVZ / Virtuozzo container's kill: a memcg-like kill at that container's limit."""
    if match := _UB_KILLED.match(text):
        rest = text[match.end() :]
        ub = match["ub"] or (m["ub"] if (m := _UB_IN_REST.search(rest)) else None)
        container = f"UB {ub}" if ub else None
    elif match := _VE_KILLED.match(text):
        rest, container = text[match.end() :], f"VE {match['ve']}"
    else:
        return None
    sizes = kb_values(rest)
    # `rss:` counts anon and file pages together: no anon-rss the kernel printed.
    return ev.Killed(
        record,
        pid=int(match["pid"]),
        comm=match["comm"],
        uid=None,
        total_vm_kb=sizes.get("vm"),
        anon_rss_kb=None,
        file_rss_kb=None,
        shmem_rss_kb=None,
        pgtables_kb=None,
        oom_score_adj=None,
        memcg=container is not None,
        container=container,
    )


CONTAINER_KILL = MessageKind(
    "container-kill",
    ("OOM killed process",),
    _container_killed,
    "the kill inside an OpenVZ / Virtuozzo container, at its limit",
    "Out of memory in UB 1234: OOM killed process 21738 (php-cgi) score 0 vm:281988kB, rss:17004kB, swap:0kB",
    begins=("Out of memory in UB", "OOM killed process"),
)


_REAPED = lazy_compile(
    r"oom_reaper: reaped process (?P<pid>\d{1,20}) \((?P<comm>.*)\),?"
    r" now anon-rss:\s*(?P<anon>\d{1,20})\s*kB,"
    r" file-rss:\s*(?P<file>\d{1,20})\s*kB, shmem-rss:\s*(?P<shmem>\d{1,20})\s*kB"
)


def _reaped(record: Record, text: str) -> ev.Event | None:
    match = _REAPED.match(text)
    if not match:
        return None
    return ev.Reaped(
        record, int(match["pid"]), match["comm"], int(match["anon"]), int(match["file"]), int(match["shmem"])
    )


OOM_REAPER = MessageKind(
    "oom-reaper",
    ("oom_reaper",),
    _reaped,
    "the reaper freed the victim's memory",
    "oom_reaper: reaped process 1966928 (llama-server), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
    begins=("oom_reaper:",),
)


def _no_killable(record: Record, text: str) -> ev.Event | None:
    return ev.NoKillable(record) if text.startswith("Out of memory and no killable") else None


NO_KILLABLE = MessageKind(
    "no-killable",
    ("Out of memory and no killable",),
    _no_killable,
    "nothing could be killed",
    "Out of memory and no killable processes...",
    begins=("Out of memory and no killable",),
)


_PANIC = lazy_compile(
    r"(?:Kernel panic - not syncing: (?:Out of memory|System is deadlocked on memory).*"
    r"|Out of memory: (?:system-wide|compulsory) panic_on_oom.*)"
)


def _panic(record: Record, text: str) -> ev.Event | None:
    return ev.OomPanic(record, text) if _PANIC.match(text) else None


OOM_PANIC = MessageKind(
    "oom-panic",
    ("emory",),
    _panic,
    "the machine panicked on OOM",
    "Kernel panic - not syncing: Out of memory: system-wide panic_on_oom is enabled",
    begins=("Kernel panic - not syncing",),
)
