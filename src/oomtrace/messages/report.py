"""The OOM report's own lines: the header, the task, Mem-Info, zones, swap, the tasks table, the memcg.

Each kind is its matcher and its entry (with a real line as its example), beside each other;
registry.py puts the entry in MESSAGES. Most of these stand only inside a report (`in_report`):
the big-file prefilter finds the report by its header or kill line and reads the rest.
"""

from __future__ import annotations

from oomtrace import events as ev
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages.kind import MessageKind, kb_values
from oomtrace.records import Record

# The header, whole or cut after the name or anywhere after it (pastes lose the line's end). A
# mask followed by what no mask holds (`gfp_mask=0x62****(...)`, masked in a vendor's doc) is
# read as no mask, never as its first digits; the fields after it are still read.
_INVOKED = lazy_compile(
    r"(?P<comm>.*?) invoked oom-killer"
    r"(?::\s*(?:gfp_mask=(?:(?P<gfp>0x[0-9a-fA-F]+)(?![0-9a-zA-Z*])(?:\((?P<flags>[^)]*)\)?)?|[^,\s]*),?)?"
    r"(?:\s*nodemask=(?P<nodemask>[^,]*),?)?(?:\s*order=(?P<order>-?\d{1,2})(?!\d))?)?"
)
_ADJ_IN_HEADER = lazy_compile(r"(?:oom_score_adj|oom_adj|oomkilladj)=(-?\d{1,20})")


# 2.6.0-2.6.1x print no name: `oom-killer: gfp_mask=0xd0` (with `, order=N` from 2.6.13).
_OLD_HEADER = lazy_compile(
    r"oom-killer: gfp_mask=(?P<gfp>0x[0-9a-fA-F]+)(?![0-9a-zA-Z*])(?:, order=(?P<order>-?\d{1,2})(?!\d))?"
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


OOM_INVOKED = MessageKind(
    "oom-invoked",
    ("invoked oom-killer", "oom-killer: gfp_mask"),
    _invoked,
    "the OOM killer was invoked (a report begins)",
    "dashboard-servi invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), "
    "order=0, oom_score_adj=200",
    begins=("oom-killer: gfp_mask",),
    after_name=" invoked oom-killer",
    name_is_comm=True,
    opens_report=True,
)


_CPUSET = lazy_compile(r"(?P<comm>.*?) cpuset=(?P<cpuset>\S*) mems_allowed=(?P<mems>\S+)")


def _cpuset(record: Record, text: str) -> ev.Event | None:
    match = _CPUSET.match(text)
    if not match:
        return None
    return ev.CpusetLine(record, match["comm"], match["cpuset"], match["mems"])


CPUSET_LINE = MessageKind(
    "cpuset-line",
    (" cpuset=",),
    _cpuset,
    "the trigger's cpuset (pre-4.19)",
    "sed cpuset=/ mems_allowed=0-1",
    after_name=" cpuset=",
    name_is_comm=True,
    in_report=True,
)


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


TASK_LINE = MessageKind(
    "task-line",
    ("CPU: ",),
    _cpu_line,
    "the task running when the killer was invoked, and the kernel release",
    "CPU: 5 PID: 4121 Comm: dashboard-servi Tainted: G           OE      6.14.0-1015-nvidia #15-Ubuntu",
    begins=("CPU: ",),
    in_report=True,
)


def _pid_line(record: Record, text: str) -> ev.Event | None:
    match = _PID_LINE_26.match(text)
    if not match:
        return None
    comm, kernel = _name_and_release(match["rest"])
    return ev.TaskLine(record, None, int(match["pid"]), None, comm, kernel)


PID_LINE = MessageKind(
    "pid-line",
    ("Pid: ",),
    _pid_line,
    "the task running when the killer was invoked (2.6)",
    "Pid: 2286, comm: java Not tainted 2.6.32-431.el6.x86_64 #1",
    begins=("Pid: ",),
    in_report=True,
)


def _hardware(record: Record, text: str) -> ev.Event | None:
    if text.startswith("Hardware name: "):
        return ev.HardwareName(record, text[len("Hardware name: ") :])
    return None


HARDWARE = MessageKind(
    "hardware",
    ("Hardware name",),
    _hardware,
    "the machine",
    "Hardware name: NVIDIA NVIDIA DGX Spark/P4242, BIOS 5.36_0ACUM018 06/19/2025",
    begins=("Hardware name: ",),
    in_report=True,
)


_SECTION_TITLES = ("Call Trace:", "Call trace:", "Tasks state (memory values in pages)")


def _section_title(record: Record, text: str) -> ev.Event | None:
    return ev.SectionTitle(record) if text.startswith(_SECTION_TITLES) else None


SECTION_TITLE = MessageKind(
    "section-title",
    ("all trace:", "all Trace:", "Tasks state"),
    _section_title,
    "the call trace or the tasks table follows",
    "Tasks state (memory values in pages):",
    begins=_SECTION_TITLES,
    in_report=True,
)


def _mem_info(record: Record, text: str) -> ev.Event | None:
    return ev.MemInfoHeader(record) if text.rstrip(":") == "Mem-Info" else None


MEM_INFO = MessageKind(
    "mem-info",
    ("Mem-Info",),
    _mem_info,
    "memory counters follow",
    "Mem-Info:",
    begins=("Mem-Info:",),
    opens_report=True,
)


_ZONE = lazy_compile(r"Node (?P<node>\d{1,20}) (?P<zone>[A-Za-z][\w]*) free:\s*\d{1,20}\s*kB")
_NODE = lazy_compile(r"Node (?P<node>\d{1,20}) active_anon:")


def _node_or_zone(record: Record, text: str) -> ev.Event | None:
    match = _ZONE.match(text)
    if match:
        return ev.ZoneLine(record, int(match["node"]), match["zone"], kb_values(text))
    match = _NODE.match(text)
    if match:
        return ev.NodeLine(record, int(match["node"]), kb_values(text))
    return None


ZONE_OR_NODE = MessageKind(
    "zone-or-node",
    ("Node ",),
    _node_or_zone,
    "a zone's watermarks or a node's counters",
    "Node 0 Normal free:339804kB boost:0kB min:339904kB low:464304kB high:588704kB",
    begins=("Node ",),
    in_report=True,
)


_SWAP = lazy_compile(r"(?P<kind>Free|Total) swap\s*=\s*(?P<kb>\d{1,20})\s*kB")


def _swap(record: Record, text: str) -> ev.Event | None:
    match = _SWAP.match(text)
    if not match:
        return None
    return ev.SwapLine(record, match["kind"].lower(), int(match["kb"]))


SWAP = MessageKind(
    "swap",
    (" swap",),
    _swap,
    "swap totals",
    "Total swap = 0kB",
    begins=("Free swap", "Total swap"),
    in_report=True,
)


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


PAGES = MessageKind("pages", ("pages",), _pages, "page totals", "31738623 pages RAM", in_report=True)


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


TASKS_HEADER = MessageKind(
    "tasks-header",
    ("pid ]", "pid  ]"),
    tasks_line,
    "the tasks table follows",
    "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name",
    opens_report=True,
)


_TASK_IN = lazy_compile(r"Task in (?P<task>\S+) killed as a result of limit of (?P<memcg>\S+)")


def _task_in(record: Record, text: str) -> ev.Event | None:
    match = _TASK_IN.match(text)
    return ev.TaskInMemcg(record, match["task"], match["memcg"]) if match else None


TASK_IN_MEMCG = MessageKind(
    "task-in-memcg",
    ("Task in ",),
    _task_in,
    "the victim's cgroup and the cgroup whose limit was hit (pre-5.0)",
    "Task in /docker/3f2a killed as a result of limit of /docker/3f2a",
    begins=("Task in /",),
    opens_report=True,
)


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


MEMCG_USAGE = MessageKind(
    "memcg-usage",
    (": usage ",),
    _memcg_usage,
    "the cgroup's usage and limit",
    "memory: usage 65536kB, limit 65536kB, failcnt 120",
    begins=("memory: usage", "memory+swap: usage", "kmem: usage", "swap: usage"),
    in_report=True,
)


_MEMCG_STATS = lazy_compile(r"Memory cgroup stats for (?P<path>.*?):(?P<rest>(?: .*)?)$")


def _memcg_stats(record: Record, text: str) -> ev.Event | None:
    match = _MEMCG_STATS.match(text)
    if not match:
        return None
    return ev.MemcgStatsHeader(record, match["path"], kb_values(match["rest"]))


MEMCG_STATS = MessageKind(
    "memcg-stats",
    ("Memory cgroup stats",),
    _memcg_stats,
    "the cgroup's memory counters follow",
    "Memory cgroup stats for /oomtrace-test:",
    begins=("Memory cgroup stats for",),
)
