"""The one registry of messages oomtrace knows, with the line grammar that reads each.

A message is recognised by its body, wherever it stands in a line: every kind declares the
literals one of which each such message holds (`anchors`: the parser's cheap filter and the
big-file prefilter's search), where such a message begins (`begins`, or `after_name` when a
process or unit name stands first), its matcher (a function from the record and its text
to an event), and its label. Adding a message is one entry in MESSAGES.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from oomtrace import events as ev
from oomtrace.frozen import Frozen
from oomtrace.lazyregex import lazy_compile
from oomtrace.records import Record

Matcher = Callable[[Record, str], ev.Event | None]


class MessageKind(Frozen):
    name: str
    """For warnings, the warning kind of the JSON contract (`nvrm-no-memory`)."""
    anchors: tuple[str, ...]
    """Literals one of which every message of this kind holds."""
    match: Matcher
    label: str
    example: str
    """One real line of this kind (from the corpus or the fixtures), message only."""
    origin: str = "kernel"
    """"kernel": only kernel records; "any": any record (the body alone is distinctive);
    otherwise the syslog identifier the message must come with (its body says too little)."""
    begins: tuple[str, ...] = ()
    """Literals the message starts with: where it begins in a line whose prefix is unknown."""
    after_name: str = ""
    """For a message that begins with a process or unit name (`java invoked oom-killer`), the
    literal that follows the name: where the name ends in a line whose prefix is unknown."""
    warning: bool = False
    """Its events are warnings collapsed into runs (the label says what they mean)."""
    opens_report: bool = False
    """The lines after it (Mem-Info counters, tasks rows) hold no anchor of their own."""
    in_report: bool = False
    """It stands only inside a report another kind opened: the big-file prefilter, which reads
    every line of a report, need not search for it."""


# printk cuts a record at 1024 bytes; anything longer is not one kernel line, and cutting it
# keeps every regex below linear in the input however hostile the line.
MAX_MESSAGE = 4096

# Sizes as kernels print them, and as people retype them: `123kB`, `123 kB`, `1,234,567kB`.
_KB_NUMBER = r"-?\d{1,3}(?:,\d{3})+(?!\d)|-?\d{1,20}"
_KB_VALUE = lazy_compile(rf"([\w()-]+):\s*({_KB_NUMBER})\s*kB", re.IGNORECASE)


def _kb_values(text: str) -> dict[str, int]:
    return {k.lower(): int(v.replace(",", "")) for k, v in _KB_VALUE.findall(text)}


# ---- the OOM report ---------------------------------------------------------------------

# The header, whole or cut after the name or anywhere after it (pastes lose the line's end).
_INVOKED = lazy_compile(
    r"(?P<comm>.*?) invoked oom-killer"
    r"(?::\s*(?:gfp_mask=(?P<gfp>0x[0-9a-fA-F]+)(?:\((?P<flags>[^)]*)\)?)?,?)?"
    r"(?:\s*nodemask=(?P<nodemask>[^,]*),?)?(?:\s*order=(?P<order>-?\d{1,2})(?!\d))?)?"
)
_ADJ_IN_HEADER = lazy_compile(r"(?:oom_score_adj|oom_adj|oomkilladj)=(-?\d{1,20})")


# 2.6.0-2.6.1x print no name: `oom-killer: gfp_mask=0xd0` (with `, order=N` from 2.6.13).
_OLD_HEADER = lazy_compile(
    r"oom-killer: gfp_mask=(?P<gfp>0x[0-9a-fA-F]+)(?:, order=(?P<order>-?\d{1,2})(?!\d))?"
)


def _invoked(record: Record, text: str) -> ev.Event | None:
    old = _OLD_HEADER.match(text)
    if old:
        order = int(old["order"]) if old["order"] else None
        return ev.OomInvoked(record, "?", old["gfp"].lower(), None, order, None, None)
    match = _INVOKED.match(text)
    if not match or not match["comm"].strip():
        return None
    adj = _ADJ_IN_HEADER.findall(text[match.end() :])
    return ev.OomInvoked(
        record,
        comm=match["comm"],
        gfp_mask=match["gfp"].lower() if match["gfp"] else None,
        gfp_flags=match["flags"],
        order=int(match["order"]) if match["order"] else None,
        # Some 2.6.3x kernels print both oom_adj and oom_score_adj: the last one is the score adj.
        oom_score_adj=int(adj[-1]) if adj else None,
        nodemask=match["nodemask"],
    )


_CPUSET = lazy_compile(r"(?P<comm>.*?) cpuset=(?P<cpuset>\S*) mems_allowed=(?P<mems>\S+)")


def _cpuset(record: Record, text: str) -> ev.Event | None:
    match = _CPUSET.match(text)
    if not match:
        return None
    return ev.CpusetLine(record, match["comm"], match["cpuset"], match["mems"])


_CPU_LINE = lazy_compile(
    r"CPU: (?P<cpu>\d{1,20}) (?:UID: (?P<uid>\d{1,20}) )?PID: (?P<pid>\d{1,20}) Comm: (?P<rest>.*)"
)
_PID_LINE_26 = lazy_compile(r"Pid: (?P<pid>\d{1,20}), comm: (?P<rest>.*)")
# What follows the name: `Not tainted 6.1.0 #1`, `Tainted: G  OE  ------------ T 3.10.0-...el7`,
# `Kdump: loaded Tainted: ...`; a cut line may end anywhere in it.
_TAINT = lazy_compile(r" (?:Kdump: loaded )?(?:Not tainted|Tainted:)")
_RELEASE = lazy_compile(r"(?:Not tainted|Tainted:[A-Z ]*?(?:-{3,}[A-Z ]*?)?)\s*(?P<kernel>\d[^\s#]*)")


def _name_and_release(rest: str) -> tuple[str, str | None]:
    taint = _TAINT.search(rest)
    if taint is None:
        return rest.strip(), None
    release = _RELEASE.search(rest, taint.start())
    return rest[: taint.start()], release["kernel"] if release else None


def _cpu_line(record: Record, text: str) -> ev.Event | None:
    match = _CPU_LINE.match(text)
    if not match:
        return None
    comm, kernel = _name_and_release(match["rest"])
    uid = int(match["uid"]) if match["uid"] else None
    return ev.TaskLine(
        record, cpu=int(match["cpu"]), pid=int(match["pid"]), uid=uid, comm=comm, kernel=kernel
    )


def _pid_line(record: Record, text: str) -> ev.Event | None:
    match = _PID_LINE_26.match(text)
    if not match:
        return None
    comm, kernel = _name_and_release(match["rest"])
    return ev.TaskLine(record, None, int(match["pid"]), None, comm, kernel)


def _hardware(record: Record, text: str) -> ev.Event | None:
    if text.startswith("Hardware name: "):
        return ev.HardwareName(record, text[len("Hardware name: ") :])
    return None


_SECTION_TITLES = ("Call Trace:", "Call trace:", "Tasks state (memory values in pages)")


def _section_title(record: Record, text: str) -> ev.Event | None:
    return ev.SectionTitle(record) if text.startswith(_SECTION_TITLES) else None


def _mem_info(record: Record, text: str) -> ev.Event | None:
    return ev.MemInfoHeader(record) if text.rstrip(":") == "Mem-Info" else None


_ZONE = lazy_compile(r"Node (?P<node>\d{1,20}) (?P<zone>[A-Za-z][\w]*) free:\s*\d{1,20}\s*kB")
_NODE = lazy_compile(r"Node (?P<node>\d{1,20}) active_anon:")


def _node_or_zone(record: Record, text: str) -> ev.Event | None:
    match = _ZONE.match(text)
    if match:
        return ev.ZoneLine(record, int(match["node"]), match["zone"], _kb_values(text))
    match = _NODE.match(text)
    if match:
        return ev.NodeLine(record, int(match["node"]), _kb_values(text))
    return None


_SWAP = lazy_compile(r"(?P<kind>Free|Total) swap\s*=\s*(?P<kb>\d{1,20})\s*kB")


def _swap(record: Record, text: str) -> ev.Event | None:
    match = _SWAP.match(text)
    if not match:
        return None
    return ev.SwapLine(record, match["kind"].lower(), int(match["kb"]))


_PAGES = lazy_compile(
    r"(?P<count>\d{1,20}) (?P<kind>pages RAM|pages reserved|total pagecache pages|pages in swap cache"
    r"|pages HighMem/MovableOnly|pages hwpoisoned|pages cma reserved|pages shared|pages non-shared)"
)


def _pages(record: Record, text: str) -> ev.Event | None:
    match = _PAGES.match(text)
    if not match:
        return None
    kind = match["kind"].replace("total ", "").replace(" pages", "").replace("pages ", "")
    return ev.PagesLine(record, kind.replace(" ", "_").replace("/", "_").lower(), int(match["count"]))


_TASKS_HEADER = lazy_compile(r"\[\s*pid\s*\]\s+(?P<rest>.*)")
_TASK_ROW = lazy_compile(r"\[\s*(?P<pid>\d{1,20})\]\s+(?P<rest>.*)")


def tasks_line(record: Record, text: str) -> ev.Event | None:
    """The tasks-table header or one of its rows (rows hold no anchor: see parse.py)."""
    match = _TASKS_HEADER.match(text)
    if match:
        return ev.TasksHeader(record, ("pid", *match["rest"].split()))
    match = _TASK_ROW.match(text)
    if match:
        return ev.TaskRow(record, int(match["pid"]), match["rest"])
    return None


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


_TASK_IN = lazy_compile(r"Task in (?P<task>\S+) killed as a result of limit of (?P<memcg>\S+)")


def _task_in(record: Record, text: str) -> ev.Event | None:
    match = _TASK_IN.match(text)
    return ev.TaskInMemcg(record, match["task"], match["memcg"]) if match else None


_MEMCG_USAGE = lazy_compile(
    r"(?P<kind>memory|memory\+swap|kmem|swap|tcpmem): usage (?P<usage>\d{1,20})kB,"
    r" limit (?P<limit>\d{1,20})kB, failcnt (?P<failcnt>\d{1,20})"
)


def _memcg_usage(record: Record, text: str) -> ev.Event | None:
    match = _MEMCG_USAGE.match(text)
    if not match:
        return None
    return ev.MemcgUsage(
        record, match["kind"], int(match["usage"]), int(match["limit"]), int(match["failcnt"])
    )


_MEMCG_STATS = lazy_compile(r"Memory cgroup stats for (?P<path>.*?):(?P<rest>(?: .*)?)$")


def _memcg_stats(record: Record, text: str) -> ev.Event | None:
    match = _MEMCG_STATS.match(text)
    if not match:
        return None
    return ev.MemcgStatsHeader(record, match["path"], _kb_values(match["rest"]))


# `Out of memory` as 2.4 to 7.x print it (and 2.4's `Out of Memory`), with the task-selection
# note some kernels add: `Out of memory (oom_kill_allocating_task): `.
_OUT_OF = r"(?:Memory cgroup out of memory|[Oo]ut of [Mm]emory(?: \([\w ]+\))?)"
_KILL_CHOSEN = lazy_compile(
    rf"(?P<lead>{_OUT_OF}: )?"
    r"[Kk]ill process (?P<pid>\d{1,20}) \((?P<comm>.*)\) score (?P<score>\d{1,20})"
    r" or (?:sacrifice child|a child)"
)


def _kill_chosen(record: Record, text: str) -> ev.Event | None:
    match = _KILL_CHOSEN.match(text)
    if not match:
        return None
    memcg = bool(match["lead"]) and match["lead"].startswith("Memory cgroup")
    return ev.KillChosen(record, int(match["pid"]), match["comm"], int(match["score"]), memcg)


# The kill line of every generation: `Killed process N (comm) total-vm:..kB, ...` (2.6.3x-7.x),
# RHEL 7's `Killed process N (comm), UID N, total-vm:...`, RHEL 6's `Killed process N, UID N,
# (comm)`, 2.4's `Out of Memory: Killed process N (comm).`; the pid may have been deleted by
# hand (`Killed process XXXX`) and the line cut anywhere, even inside the name.
_KILLED = lazy_compile(
    rf"(?P<lead>{_OUT_OF}: )?Killed process (?P<pid>\d{{1,20}}(?![\d\w])|[^\s(,]*)"
    r"(?:, UID (?P<uid>\d{1,20}),)? ?\("
)
# What may follow the name's `)`; a cut line may end inside the word (`(rms) total-v`).
_KILLED_NAME_END = lazy_compile(r"\)(?=,? ?(?:UID|total|anon|file|shmem|pgtables|score)|[.,]?\s*$)")
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
    sizes = _kb_values(rest)
    uid = match["uid"] or (m.group(1) if (m := _KILLED_UID.search(rest)) else None)
    adj = _KILLED_ADJ.search(rest)
    lead = match["lead"] or ""
    return ev.Killed(
        record,
        pid=int(match["pid"]) if match["pid"].isdigit() else None,
        comm=comm,
        uid=int(uid) if uid is not None else None,
        total_vm_kb=sizes.get("total-vm"),
        anon_rss_kb=sizes.get("anon-rss"),
        file_rss_kb=sizes.get("file-rss"),
        shmem_rss_kb=sizes.get("shmem-rss"),
        pgtables_kb=sizes.get("pgtables"),
        oom_score_adj=int(adj.group(1)) if adj else None,
        memcg=lead.startswith("Memory cgroup"),
        global_lead=bool(lead) and not lead.startswith("Memory cgroup"),
        comm_cut=cut,
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
    sizes = _kb_values(rest)
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


def _no_killable(record: Record, text: str) -> ev.Event | None:
    return ev.NoKillable(record) if text.startswith("Out of memory and no killable") else None


_PANIC = lazy_compile(
    r"(?:Kernel panic - not syncing: (?:Out of memory|System is deadlocked on memory).*"
    r"|Out of memory: (?:system-wide|compulsory) panic_on_oom.*)"
)


def _panic(record: Record, text: str) -> ev.Event | None:
    return ev.OomPanic(record, text) if _PANIC.match(text) else None


_SUPPRESSED = lazy_compile(r"(?P<fn>\w+): (?P<count>\d{1,20}) callbacks suppressed")


def _suppressed(record: Record, text: str) -> ev.Event | None:
    match = _SUPPRESSED.match(text)
    if not match or ("oom" not in match["fn"] and "out_of_memory" not in match["fn"]):
        return None
    return ev.CallbacksSuppressed(record, match["fn"], int(match["count"]))


# ---- early warnings ----------------------------------------------------------------------

_NVRM_FUNCTION = lazy_compile(r"returned from (?P<fn>[\w]+)")
_NVRM_CONTEXT = lazy_compile(r"NVRM: (?P<fn>\w+): \*\*\*")
_XID = lazy_compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<code>\d{1,20})")


def _nvrm_xid(record: Record, text: str) -> ev.Event | None:
    xid = _XID.search(text)
    if not xid:
        return None
    return ev.EarlyWarning(record, "nvrm-xid", text[xid.start() :], f"xid-{xid['code']}")


def _nvrm_no_memory(record: Record, text: str) -> ev.Event | None:
    start = text.find("NVRM")
    if start < 0 or _XID.match(text, start):
        return None
    body = text[start:]
    lowered = body.lower()
    if "nv_err_no_memory" in lowered or "out of memory" in lowered or "cannot allocate" in lowered:
        function = _NVRM_FUNCTION.search(body) or _NVRM_CONTEXT.search(body)
        return ev.EarlyWarning(record, "nvrm-no-memory", body, function["fn"] if function else "nvrm")
    return None


_PAGE_ALLOC = lazy_compile(
    r"(?P<comm>.*?): page allocation failure[.:] order:(?P<order>\d{1,2})(?!\d),?"
    r"\s*mode:(?P<mode>0x[0-9a-fA-F]+)"
)


# The same failure as other allocators and older kernels say it: `vmalloc: allocation failure: N
# bytes` (3.x-4.x), `vmalloc error: size N, ...` (6.x), 2.4's `__alloc_pages: 0-order allocation
# failed (gfp=0x1d2/0)`.
_OTHER_ALLOC = lazy_compile(
    r"(?:(?P<comm>\S+): )?vmalloc(?:: allocation failure| error: size)"
    r"|__alloc_pages: (?P<order>\d{1,2})-order allocation failed"
)


def _page_alloc(record: Record, text: str) -> ev.Event | None:
    match = _PAGE_ALLOC.match(text)
    if not match:
        other = _OTHER_ALLOC.search(text)
        if not other:
            return None
        what = "vmalloc" if "vmalloc" in other[0] else f"order{other['order']}"
        return ev.EarlyWarning(
            record, "page-allocation-failure", text[other.start() :], f"{other['comm'] or '?'}:{what}"
        )
    return ev.EarlyWarning(record, "page-allocation-failure", text, f"{match['comm']}:order{match['order']}")


_HUNG = lazy_compile(
    r"INFO: task (?P<comm>.*):(?P<pid>\d{1,20}) blocked for more than (?P<s>\d{1,20}) seconds"
)


def _hung(record: Record, text: str) -> ev.Event | None:
    match = _HUNG.search(text)
    return ev.EarlyWarning(record, "hung-task", text, match["comm"]) if match else None


# The banner init/main.c prints first at every boot: the release, then `(` and the builder.
_BOOT = lazy_compile(r"Linux version (?P<release>\S{1,200}) \(")


def _boot(record: Record, text: str) -> ev.Event | None:
    match = _BOOT.search(text)
    return ev.BootStarted(record, match["release"]) if match else None


_VM_ENOUGH = lazy_compile(r"__vm_enough_memory: pid: (?P<pid>\d{1,20}), comm: (?P<comm>.*?), ")


def _vm_enough(record: Record, text: str) -> ev.Event | None:
    match = _VM_ENOUGH.search(text)
    return ev.EarlyWarning(record, "overcommit-refused", text, match["comm"]) if match else None


# Records that say the log itself is incomplete: journald could not keep up with the kernel,
# printk dropped lines, or a rate limit swallowed them.
_LOST = lazy_compile(
    r"Missed (?P<n>\d{1,20}) kernel messages"
    r"|(?:\*\* )?(?P<m>\d{1,20}) printk messages dropped"
    r"|(?P<fn>\w+): (?P<k>\d{1,20}) callbacks suppressed"
)


def _lost(record: Record, text: str) -> ev.Event | None:
    match = _LOST.search(text)
    if not match:
        return None
    if match["fn"] is not None:
        return _suppressed(record, text[match.start() :]) if "oom" in match["fn"] else None
    what = "journald" if match["n"] is not None else "printk"
    return ev.EarlyWarning(record, "lost-messages", text[match.start() :], what)


_CRASHED = lazy_compile(
    r"(?:traps: )?(?P<comm>[^\[\]]{1,64}?)\[(?P<pid>\d{1,20})\]:? (?:segfault at|general protection"
    r"|trap |unhandled (?:page fault|signal)|invalid opcode|divide error)"
)


def _crash(record: Record, text: str) -> ev.Event | None:
    match = _CRASHED.match(text)
    if not match:
        return None
    return ev.ProcessCrash(record, match["comm"], int(match["pid"]), text)


# ---- records the kernel never writes: systemd, systemd-oomd, earlyoom, nohang, lmkd, journald ----

_UNIT = r"(?P<unit>[\w@.:\\-]+)"
# `journalctl -u x -o cat` and `systemctl status` print these without the unit's name.
_UNIT_OOM = lazy_compile(rf"(?:{_UNIT}: |^)A process of this unit has been killed by the OOM killer\.?")
_UNIT_MAIN_KILLED = lazy_compile(rf"(?:{_UNIT}: |^)Main process exited, code=killed, status=(?P<status>\S+)")
_UNIT_FAILED = lazy_compile(rf"(?:{_UNIT}: |^)Failed with result '(?P<result>[\w-]+)'")
_UNIT_CONSUMED = lazy_compile(rf"{_UNIT}: Consumed (?P<text>.*)")
_MEMORY_PEAK = lazy_compile(r"([\d.]+)([KMGT])? memory peak")
_UNIT_RESTART = lazy_compile(rf"{_UNIT}: Scheduled restart job, restart counter is at (?P<n>\d{{1,9}})")
_UNIT_OOMD = lazy_compile(rf"{_UNIT}: systemd-oomd killed (?P<n>\d{{1,9}}) process")
_KIB = {None: 1 / 1024, "K": 1, "M": 1024, "G": 1024 * 1024, "T": 1024**3}


def _unit_oom(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_OOM.search(text)
    return ev.UnitRecord(record, match["unit"], "oom-kill", "killed by the OOM killer") if match else None


def _unit_main_killed(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_MAIN_KILLED.search(text)
    return ev.UnitRecord(record, match["unit"], "main-killed", match["status"]) if match else None


def _unit_failed(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_FAILED.search(text)
    return ev.UnitRecord(record, match["unit"], "failed", match["result"]) if match else None


def _unit_restart(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_RESTART.search(text)
    if not match:
        return None
    return ev.UnitRecord(record, match["unit"], "restart", text[match.start() :], count=int(match["n"]))


def _unit_oomd(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_OOMD.search(text)
    if not match:
        return None
    return ev.UnitRecord(record, match["unit"], "oomd-killed", text[match.start() :], count=int(match["n"]))


def _unit_consumed(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_CONSUMED.search(text)
    if not match:
        return None
    peak = _MEMORY_PEAK.search(match["text"])
    peak_kb = round(float(peak[1]) * _KIB[peak[2]]) if peak else None
    return ev.UnitRecord(record, match["unit"], "consumed", match["text"], peak_kb=peak_kb)


# systemd-oomd: `Killed /user.slice/...scope due to memory used (...) / total (...) and swap
# used ...` (v248+), `Marked /...scope for killing due to ...` (v253+); and Facebook's oomd,
# which systemd-oomd grew from: `oomd attempting to kill N`.
_OOMD_KILL = lazy_compile(r"(?:Killed|Marked) (?P<cgroup>/\S+) (?:for killing )?due to (?P<reason>.*)")
_OOMD_ATTEMPT = lazy_compile(r"oomd attempting to kill (?P<what>\S+)(?P<rest>.*)")


def _oomd(record: Record, text: str) -> ev.Event | None:
    match = _OOMD_KILL.search(text)
    if match:
        return ev.UserspaceKill(
            record, "systemd-oomd", None, None, match["cgroup"], "SIGKILL", match["reason"]
        )
    match = _OOMD_ATTEMPT.search(text)
    if match:
        what = match["what"].rstrip(",.:")
        pid = int(what) if what.isdigit() else None
        cgroup = what if what.startswith("/") else None
        return ev.UserspaceKill(record, "systemd-oomd", None, pid, cgroup, "SIGKILL", text[match.start() :])
    return None


# earlyoom's kill line across its versions: `sending SIGTERM to process N uid N "comm": badness N,
# VmRSS N MiB` (1.6+; 1.8 adds `oom_score N, oom_score_adj N` and the cmdline), the same without
# uid (1.3-1.5), `killing process N "comm" with signal 15: badness N, VmRSS N MiB` (1.2),
# `Killing process 'comm' with signal 15, pid: N, badness: N, VmRSS: N MiB` (1.1), and
# `Killing process N comm with oom_score N` (older).
_EARLYOOM_KILL = lazy_compile(
    r"(?:sending (?P<sig>SIG\w+) to process|[Kk]illing process) (?P<pid>\d{1,9})(?: uid (?P<uid>\d{1,9}))?"
    r' (?:"(?P<comm>[^"]*)"|\((?P<comm2>[^)]*)\)|(?P<comm3>[^\s:,]+))'
)
_EARLYOOM_OLD = lazy_compile(
    r"Killing process '(?P<comm>[^']*)' with signal (?P<sig>\d{1,2}), pid: (?P<pid>\d{1,9})"
)
_EARLYOOM_SIGNAL = lazy_compile(r"with signal (\d{1,2})")
_EARLYOOM_BADNESS = lazy_compile(r"(?:badness|oom_score):? (-?\d{1,9})")
_EARLYOOM_ADJ = lazy_compile(r"oom_score_adj:? (-?\d{1,9})")
_EARLYOOM_RSS = lazy_compile(r"VmRSS:? (\d{1,12}) MiB")
_SIGNALS = {"9": "SIGKILL", "15": "SIGTERM"}


def _earlyoom(record: Record, text: str) -> ev.Event | None:
    old = _EARLYOOM_OLD.search(text)
    match = old or _EARLYOOM_KILL.search(text)
    if not match:
        return None
    signal = match["sig"] if not old else None
    number = _EARLYOOM_SIGNAL.search(text, match.start())
    if signal is None and number is not None:
        signal = _SIGNALS.get(number[1], f"signal {number[1]}")
    # `Killing process N comm` is also the wording of other tools: only earlyoom's own records,
    # or a line that says its signal as earlyoom does.
    if signal is None and record.ident != "earlyoom":
        return None
    rest = text[match.end() :]
    badness = _EARLYOOM_BADNESS.search(rest)
    adj = _EARLYOOM_ADJ.search(rest)
    rss = _EARLYOOM_RSS.search(rest)
    comm = match["comm"] if old else match["comm"] or match["comm2"] or match["comm3"]
    uid = None if old else match["uid"]
    return ev.UserspaceKill(
        record,
        "earlyoom",
        comm,
        int(match["pid"]),
        None,
        signal or "SIGTERM",
        text[match.start() :],
        int(rss[1]) * 1024 if rss else None,
        int(badness[1]) if badness else None,
        int(adj[1]) if adj else None,
        int(uid) if uid else None,
    )


_EARLYOOM_LOW = lazy_compile(r"low memory! at or below (?P<what>SIG\w+) limits")


def _earlyoom_low(record: Record, text: str) -> ev.Event | None:
    low = _EARLYOOM_LOW.search(text)
    return ev.EarlyWarning(record, "earlyoom-low-memory", text[low.start() :], "earlyoom") if low else None


_NOHANG_KILL = lazy_compile(
    r"(?P<sig>SIGTERM|SIGKILL).*?\b(?:PID|pid):? (?P<pid>\d{1,9}).*?\b(?:Name|name):? (?P<comm>\S+)"
)


# nohang's own wording of its corrective action, with or without a journal prefix.
_NOHANG_ACTION = lazy_compile(
    r"Send (?P<sig>SIG\w+) to (?:the victim|(?P<comm>\S+))"
    r"|Run the command: kill -(?P<ksig>\w+) (?P<pid>\d{1,9})"
)


def _nohang(record: Record, text: str) -> ev.Event | None:
    match = _NOHANG_KILL.search(text) if record.ident == "nohang" else None
    if match:
        return ev.UserspaceKill(record, "nohang", match["comm"], int(match["pid"]), None, match["sig"], text)
    action = _NOHANG_ACTION.search(text)
    if not action:
        return None
    pid = int(action["pid"]) if action["pid"] else None
    signal = action["sig"] or f"SIG{action['ksig']}"
    return ev.UserspaceKill(record, "nohang", action["comm"], pid, None, signal, text[action.start() :])


# nohang names the process it chose before it acts on it (`Process with highest badness ...:`).
_NOHANG_CHOSEN = lazy_compile(
    r"\s*PID: (?P<pid>\d{1,9}), Name: (?P<comm>\S.*?), badness: (?P<badness>-?\d{1,9})\s*$"
)


def _nohang_chosen(record: Record, text: str) -> ev.Event | None:
    match = _NOHANG_CHOSEN.match(text)
    if not match:
        return None
    return ev.VictimNamed(record, "nohang", int(match["pid"]), match["comm"], int(match["badness"]))


# Slurm's step daemon reports the kernel's kills in the job's memory cgroup.
_SLURM_OOM = lazy_compile(r"Detected (?P<n>\d{1,9}) oom[-_]kill event\(s\) in (?P<step>.+?) cgroup")


def _slurm(record: Record, text: str) -> ev.Event | None:
    match = _SLURM_OOM.search(text)
    if not match:
        return None
    return ev.UserspaceKill(
        record,
        "kernel",
        None,
        None,
        match["step"],
        None,
        text[match.start() :],
        constraint="memcg",
        trigger="slurmstepd",
    )


# Android's userspace lmkd: `Kill 'com.x' (1234), uid 10123, oom_score_adj 900 to free 4567kB rss,
# 890kB swap; reason: ...` (older: `oom_adj 906 to free 42316kB`).
_LMKD_KILL = lazy_compile(
    r"Kill '(?P<comm>[^']+)' \((?P<pid>\d{1,9})\), (?:uid (?P<uid>\d{1,9}), )?"
    r"(?:oom_score_adj|oom_adj|adj) (?P<adj>-?\d{1,5})(?:.*?(?P<rss>\d{1,12})kB(?: rss)?)?"
)


def _lmkd(record: Record, text: str) -> ev.Event | None:
    match = _LMKD_KILL.search(text)
    if not match:
        return None
    return ev.UserspaceKill(
        record,
        "lmkd",
        match["comm"],
        int(match["pid"]),
        None,
        "SIGKILL",
        text[match.start() :],
        int(match["rss"]) if match["rss"] else None,
        None,
        int(match["adj"]),
        int(match["uid"]) if match["uid"] else None,
        # lmkd logs under the tag `lowmemorykiller`; the daemon that decided is lmkd.
        trigger="lmkd",
        trigger_pid=record.pid,
    )


# The Android kernel's staging driver (drivers/staging/android/lowmemorykiller.c): `lowmemorykiller:
# Killing 'com.x' (1234), adj 900,\n   to free 4567kB on behalf of 'kswapd0' (45) because\n   cache
# ...`; its continuation lines are joined to it (parse.py), or lost in a paste.
_LOWMEM = lazy_compile(
    r"Killing '(?P<comm>[^']*)' \((?P<pid>\d{1,9})\),\s*(?:adj|oom_adj|oom_score_adj) (?P<adj>-?\d{1,5})"
    r"(?:,?\s*to free (?P<free>\d{1,12})kB on behalf of '(?P<by>[^']*)' \((?P<by_pid>\d{1,9})\))?"
)


def _lowmemorykiller(record: Record, text: str) -> ev.Event | None:
    match = _LOWMEM.search(text)
    if not match:
        return None
    return ev.UserspaceKill(
        record,
        "lowmemorykiller",
        match["comm"],
        int(match["pid"]),
        None,
        "SIGKILL",
        text[match.start() :],
        int(match["free"]) if match["free"] else None,
        None,
        int(match["adj"]),
        None,
        trigger=match["by"],
        trigger_pid=int(match["by_pid"]) if match["by_pid"] else None,
    )


def _journald_pressure(record: Record, text: str) -> ev.Event | None:
    if "Under memory pressure, flushing caches" not in text:
        return None
    return ev.EarlyWarning(record, "journald-memory-pressure", text, "journald")


_WATCH_WARNING = lazy_compile(r"warning (?P<kind>[a-z][\w-]{0,40}): (?P<text>.+)")


def _watch_warning(record: Record, text: str) -> ev.Event | None:
    match = _WATCH_WARNING.match(text)
    return ev.EarlyWarning(record, "watch-warning", match["text"], match["kind"]) if match else None


# ---- the registry --------------------------------------------------------------------------

# Order matters where two kinds can match one line: the first that returns an event wins.
MESSAGES: tuple[MessageKind, ...] = (
    MessageKind(
        "oom-invoked",
        ("invoked oom-killer", "oom-killer: gfp_mask"),
        _invoked,
        "the OOM killer was invoked (a report begins)",
        "dashboard-servi invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), "
        "order=0, oom_score_adj=200",
        begins=("oom-killer: gfp_mask",),
        after_name=" invoked oom-killer",
        opens_report=True,
    ),
    MessageKind(
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
    ),
    MessageKind(
        "container-kill",
        ("OOM killed process",),
        _container_killed,
        "the kill inside an OpenVZ / Virtuozzo container, at its limit",
        "Out of memory in UB 1234: OOM killed process 21738 (php-cgi) score 0 vm:281988kB, rss:17004kB, "
        "swap:0kB",
        begins=("Out of memory in UB", "OOM killed process"),
    ),
    MessageKind(
        "kill-chosen",
        ("ill process",),
        _kill_chosen,
        "the task the kernel chose (pre-5.0)",
        "Out of memory: Kill process 6576 (mysqld) score 651 or sacrifice child",
        begins=("Memory cgroup out of memory", "Out of memory", "Kill process"),
    ),
    MessageKind(
        "vm-killing",
        ("VM: killing process",),
        _vm_killing,
        "the kill (2.4 kernels)",
        "VM: killing process mysqld",
        begins=("VM: killing process",),
    ),
    MessageKind(
        "oom-kill-summary",
        ("oom-kill:",),
        _oom_kill,
        "the one-line summary of the kill (4.19+)",
        "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
        "task_memcg=/user.slice,task=llama-server,pid=1966928,uid=1000",
        begins=("oom-kill:",),
    ),
    MessageKind(
        "oom-reaper",
        ("oom_reaper",),
        _reaped,
        "the reaper freed the victim's memory",
        "oom_reaper: reaped process 1966928 (llama-server), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
        begins=("oom_reaper:",),
    ),
    MessageKind(
        "no-killable",
        ("Out of memory and no killable",),
        _no_killable,
        "nothing could be killed",
        "Out of memory and no killable processes...",
        begins=("Out of memory and no killable",),
    ),
    MessageKind(
        "oom-panic",
        ("emory",),
        _panic,
        "the machine panicked on OOM",
        "Kernel panic - not syncing: Out of memory: system-wide panic_on_oom is enabled",
        begins=("Kernel panic - not syncing",),
    ),
    MessageKind(
        "lost-messages",
        ("Missed ", "messages dropped", "callbacks suppressed"),
        _lost,
        "records were lost: the log is incomplete",
        "Missed 1204 kernel messages",
        origin="any",
        begins=("Missed ",),
        warning=True,
    ),
    MessageKind(
        "nvrm-xid",
        ("NVRM: Xid (",),
        _nvrm_xid,
        "NVIDIA Xid error",
        "NVRM: Xid (PCI:0000:01:00): 119, pid=1234, name=python3, Timeout after 6s of waiting for RPC "
        "response from GPU0 GSP!",
        begins=("NVRM:",),
        warning=True,
    ),
    MessageKind(
        "nvrm-no-memory",
        ("NV_ERR_NO_MEMORY", "annot allocate", "NVRM: Out of memory", "NVRM: out of memory"),
        _nvrm_no_memory,
        "NVIDIA driver could not allocate memory",
        "NVRM: nvCheckFailedNoMemory: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) "
        "returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1359",
        begins=("NVRM:",),
        warning=True,
    ),
    MessageKind(
        "page-allocation-failure",
        ("page allocation failure", "vmalloc: allocation failure", "vmalloc error", "allocation failed"),
        _page_alloc,
        "kernel page allocation failure",
        "kworker/u8:2: page allocation failure: order:4, mode:0x40cc0(GFP_KERNEL|__GFP_COMP), "
        "nodemask=(null),cpuset=/,mems_allowed=0",
        after_name=": page allocation failure",
        warning=True,
    ),
    MessageKind(
        "hung-task",
        ("blocked for more than",),
        _hung,
        "task blocked (hung task)",
        "INFO: task jbd2/sda1-8:312 blocked for more than 120 seconds.",
        begins=("INFO: task",),
        warning=True,
    ),
    MessageKind(
        "boot-started",
        ("Linux version ",),
        _boot,
        "a boot began (the kernel's first line)",
        # Paul Menzel's dmesg on linux-acpi, 2022-01-10 (mail-wrapped; its flowed breaks joined):
        # https://lore.kernel.org/linux-acpi/b177cb21-aa01-2408-9b26-164c028b6593@molgen.mpg.de/
        "Linux version 5.15.0-2-amd64 (debian-kernel@lists.debian.org) (gcc-11 (Debian 11.2.0-13) "
        "11.2.0, GNU ld (GNU Binutils for Debian) 2.37) #1 SMP Debian 5.15.5-2 (2021-12-18)",
        begins=("Linux version ",),
    ),
    MessageKind(
        "overcommit-refused",
        ("__vm_enough_memory",),
        _vm_enough,
        "allocation refused by overcommit accounting",
        "__vm_enough_memory: pid: 4121, comm: python3, not enough memory for the allocation",
        begins=("__vm_enough_memory",),
        warning=True,
    ),
    MessageKind(
        "crash",
        ("segfault", "traps:"),
        _crash,
        "a process crashed (not an OOM)",
        "python3[4121]: segfault at 0 ip 00007f2b4c3d2a10 sp 00007ffd5a0b1c40 error 4 in libc.so.6",
    ),
    MessageKind(
        "cpuset-line",
        (" cpuset=",),
        _cpuset,
        "the trigger's cpuset (pre-4.19)",
        "sed cpuset=/ mems_allowed=0-1",
        after_name=" cpuset=",
        in_report=True,
    ),
    MessageKind(
        "task-line",
        ("CPU: ",),
        _cpu_line,
        "the task running when the killer was invoked, and the kernel release",
        "CPU: 5 PID: 4121 Comm: dashboard-servi Tainted: G           OE      6.14.0-1015-nvidia #15-Ubuntu",
        begins=("CPU: ",),
        in_report=True,
    ),
    MessageKind(
        "pid-line",
        ("Pid: ",),
        _pid_line,
        "the task running when the killer was invoked (2.6)",
        "Pid: 2286, comm: java Not tainted 2.6.32-431.el6.x86_64 #1",
        begins=("Pid: ",),
        in_report=True,
    ),
    MessageKind(
        "hardware",
        ("Hardware name",),
        _hardware,
        "the machine",
        "Hardware name: NVIDIA NVIDIA DGX Spark/P4242, BIOS 5.36_0ACUM018 06/19/2025",
        begins=("Hardware name: ",),
        in_report=True,
    ),
    MessageKind(
        "section-title",
        ("all trace:", "all Trace:", "Tasks state"),
        _section_title,
        "the call trace or the tasks table follows",
        "Tasks state (memory values in pages):",
        begins=_SECTION_TITLES,
        in_report=True,
    ),
    MessageKind(
        "mem-info",
        ("Mem-Info",),
        _mem_info,
        "memory counters follow",
        "Mem-Info:",
        begins=("Mem-Info:",),
        opens_report=True,
    ),
    MessageKind(
        "zone-or-node",
        ("Node ",),
        _node_or_zone,
        "a zone's watermarks or a node's counters",
        "Node 0 Normal free:339804kB boost:0kB min:339904kB low:464304kB high:588704kB",
        begins=("Node ",),
        in_report=True,
    ),
    MessageKind(
        "swap",
        (" swap",),
        _swap,
        "swap totals",
        "Total swap = 0kB",
        begins=("Free swap", "Total swap"),
        in_report=True,
    ),
    MessageKind("pages", ("pages",), _pages, "page totals", "31738623 pages RAM", in_report=True),
    MessageKind(
        "task-in-memcg",
        ("Task in ",),
        _task_in,
        "the victim's cgroup and the cgroup whose limit was hit (pre-5.0)",
        "Task in /docker/3f2a killed as a result of limit of /docker/3f2a",
        begins=("Task in /",),
        opens_report=True,
    ),
    MessageKind(
        "memcg-usage",
        (": usage ",),
        _memcg_usage,
        "the cgroup's usage and limit",
        "memory: usage 65536kB, limit 65536kB, failcnt 120",
        begins=("memory: usage", "memory+swap: usage", "kmem: usage", "swap: usage"),
        in_report=True,
    ),
    MessageKind(
        "memcg-stats",
        ("Memory cgroup stats",),
        _memcg_stats,
        "the cgroup's memory counters follow",
        "Memory cgroup stats for /oomtrace-test:",
        begins=("Memory cgroup stats for",),
    ),
    MessageKind(
        "tasks-header",
        ("pid ]", "pid  ]"),
        tasks_line,
        "the tasks table follows",
        "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name",
        opens_report=True,
    ),
    # Kinds of the records the kernel never writes.
    MessageKind(
        "unit-oom-kill",
        ("OOM killer",),
        _unit_oom,
        "systemd: a process of the unit was OOM-killed",
        "llama.service: A process of this unit has been killed by the OOM killer.",
        origin="any",
        after_name=": A process of this unit",
    ),
    MessageKind(
        "unit-main-killed",
        ("code=killed",),
        _unit_main_killed,
        "systemd: the unit's main process was killed",
        "llama.service: Main process exited, code=killed, status=9/KILL",
        origin="any",
        after_name=": Main process exited",
    ),
    MessageKind(
        "unit-failed",
        ("Failed with result",),
        _unit_failed,
        "systemd: the unit failed",
        "ollama.service: Failed with result 'oom-kill'.",
        origin="any",
        after_name=": Failed with result",
    ),
    MessageKind(
        "unit-restart",
        ("restart counter",),
        _unit_restart,
        "systemd: the unit is restarted",
        "llama.service: Scheduled restart job, restart counter is at 3.",
        origin="any",
        after_name=": Scheduled restart job",
    ),
    MessageKind(
        "unit-oomd-killed",
        ("systemd-oomd killed",),
        _unit_oomd,
        "systemd: systemd-oomd killed processes of the unit",
        "user@1000.service: systemd-oomd killed 5 process(es) in this unit.",
        origin="any",
        after_name=": systemd-oomd killed",
    ),
    MessageKind(
        "unit-consumed",
        (": Consumed ",),
        _unit_consumed,
        "systemd: what the unit consumed",
        "ollama.service: Consumed 2min 45.760s CPU time, 11.4G memory peak.",
        origin="any",
        after_name=": Consumed ",
    ),
    MessageKind(
        "systemd-oomd-kill",
        ("Killed /", "Marked /", "oomd attempting to kill"),
        _oomd,
        "systemd-oomd killed a cgroup",
        "Killed /user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-4321.scope "
        "due to memory pressure for /user.slice/user-1000.slice/user@1000.service being 61.39% > 50.00% "
        "for > 20s with reclaim activity",
        origin="any",
        begins=("Killed /", "Marked /", "oomd attempting"),
    ),
    MessageKind(
        "earlyoom-kill",
        ("SIGTERM to process", "SIGKILL to process", "illing process"),
        _earlyoom,
        "earlyoom killed a process",
        'sending SIGTERM to process 1234 uid 1000 "firefox": badness 900, VmRSS 3012 MiB',
        origin="any",
        begins=("sending SIG",),
    ),
    MessageKind(
        "earlyoom-low-memory",
        ("low memory!",),
        _earlyoom_low,
        "earlyoom saw memory below its limits",
        "low memory! at or below SIGTERM limits: mem 10.00%, swap  5.00%",
        origin="any",
        warning=True,
    ),
    MessageKind(
        "nohang-kill",
        ("SIGTERM", "SIGKILL", "Run the command: kill"),
        _nohang,
        "nohang killed a process",
        "  Send SIGTERM to the victim; total response time: 13246 ms",
        origin="any",
    ),
    MessageKind(
        "nohang-victim",
        (", Name: ",),
        _nohang_chosen,
        "nohang names the process it chose (its kill line may not)",
        "  PID: 12297, Name: tail, badness: 727",
        origin="any",
    ),
    MessageKind(
        "slurm-oom-event",
        ("oom-kill event", "oom_kill event"),
        _slurm,
        "slurm saw the kernel kill in a job's cgroup",
        "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup.",
        origin="any",
    ),
    MessageKind(
        "lmkd-kill",
        ("Kill '",),
        _lmkd,
        "Android's lmkd killed an app",
        "Kill 'com.android.chrome' (12345), uid 10123, oom_score_adj 900 to free 123456kB rss, 7890kB swap",
        origin="any",
        begins=("Kill '",),
    ),
    MessageKind(
        "lowmemorykiller-kill",
        ("Killing '",),
        _lowmemorykiller,
        "Android's kernel lowmemorykiller killed an app",
        "lowmemorykiller: Killing 'com.android.chrome' (12345), adj 900,",
        origin="any",
        begins=("lowmemorykiller:", "Killing '"),
    ),
    MessageKind(
        "journald-memory-pressure",
        ("Under memory pressure",),
        _journald_pressure,
        "journald flushed its caches under memory pressure",
        "Under memory pressure, flushing caches.",
        origin="any",
        warning=True,
    ),
    MessageKind(
        "watch-warning",
        ("warning ",),
        _watch_warning,
        "oomtrace watch saw memory run short (PSI, MemAvailable, a cgroup's memory events)",
        "warning psi-some: memory pressure some avg10 23.5% (warn at 10%)",
        origin="oomtrace-watch",
        warning=True,
    ),
)

WARNING_LABELS = {kind.name: kind.label for kind in MESSAGES if kind.warning}
MESSAGE_KINDS = {kind.name: kind for kind in MESSAGES}

# Where a known message begins in a line whose prefix no grammar read.
_BEGINS = lazy_compile(
    "|".join(re.escape(b) for b in sorted({b for k in MESSAGES for b in k.begins}, key=len)[::-1])
)
_TASKS_BEGIN = lazy_compile(r"\[\s*pid\s*\]|\[\s*\d{1,9}\]\s+\d")
_NAME_ENDS = tuple(k.after_name for k in MESSAGES if k.after_name)
# What separates a prefix from a name that stands first in a message.
_SEPARATORS = ("] ", ": ", "| ", "> ", "$ ", "# ", "\t")


def begins_known(text: str) -> bool:
    """Does `text` begin with a known message (not merely hold one further in)?"""
    return _BEGINS.match(text) is not None


def message_start(text: str) -> int:
    """Where the first known message begins in `text` (0 when it begins it, or none is there)."""
    # Asked of every report line; a crash loop repeats its report lines word for word.
    return _message_start_seen(text) if len(text) <= 512 else _message_start(text)


def _message_start(text: str) -> int:
    starts = []
    found = _BEGINS.search(text)
    if found:
        if found.start() == 0:
            return 0
        starts.append(found.start())
    table = _TASKS_BEGIN.search(text)
    if table:
        starts.append(table.start())
    for name_end in _NAME_ENDS:
        at = text.find(name_end)
        if at > 0:
            head = text[:at]
            starts.append(max(head.rfind(sep) + len(sep) if sep in head else 0 for sep in _SEPARATORS))
    return min(starts) if starts else 0


_message_start_seen = functools.lru_cache(maxsize=4096)(_message_start)


def readme_table() -> str:
    """The table of the messages oomtrace knows in docs/messages.md (tests/test_messages.py keeps it
    true)."""
    rows = ["| message | what it tells | from |", "|---|---|---|"]
    for kind in MESSAGES:
        origin = {"kernel": "kernel", "any": "any source"}.get(kind.origin, kind.origin)
        anchors = ", ".join(f"`{a.strip()}`" for a in kind.anchors)
        rows.append(f"| {kind.name} ({anchors}) | {kind.label} | {origin} |")
    return "\n".join(rows)
