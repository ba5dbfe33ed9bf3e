"""Records → events: the kernel's OOM-report line grammar, across 2.6 to 7.x."""

from __future__ import annotations

import re
from collections.abc import Callable

from oomtrace import events as ev
from oomtrace.records import Record

_INVOKED = re.compile(
    r"(?P<comm>.*?) invoked oom-killer: gfp_mask=(?P<gfp>0x[0-9a-fA-F]+)(?:\((?P<flags>[^)]*)\))?,"
    r"(?: nodemask=(?P<nodemask>[^,]*),)? order=(?P<order>-?\d{1,2})(?!\d)"
)
_ADJ_IN_HEADER = re.compile(r"(?:oom_score_adj|oom_adj|oomkilladj)=(-?\d{1,20})")
_CPUSET = re.compile(r"(?P<comm>.*?) cpuset=(?P<cpuset>\S*) mems_allowed=(?P<mems>\S+)")
_CPU_LINE = re.compile(
    r"CPU: (?P<cpu>\d{1,20}) (?:UID: (?P<uid>\d{1,20}) )?PID: (?P<pid>\d{1,20}) Comm: (?P<comm>.*?) "
    r"(?:Not tainted|Tainted: [A-Z ]*?)\s*(?P<kernel>\d[^\s#]*)"
)
_PID_LINE_26 = re.compile(
    r"Pid: (?P<pid>\d{1,20}), comm: (?P<comm>.*?) (?:Not tainted|Tainted: [A-Z ]*?)\s*(?P<kernel>\d[^\s#]*)"
)
_FRAME = re.compile(
    r"(?:\[<[0-9a-fA-F]+>\] )?(?P<unsure>\? )?(?P<fn>[A-Za-z_.$][\w.$]*)\+0x[0-9a-fA-F]+/0x[0-9a-fA-F]+"
    r"(?: \[(?P<mod>[\w-]+)\])?"
)
_COUNTERS = re.compile(r"(?:[\w()]+:-?\d{1,20}\s*)+")
_COUNTER = re.compile(r"([\w()]+):(-?\d{1,20})")
_KB_VALUE = re.compile(r"([\w()-]+):\s*(-?\d{1,20})\s*kB", re.IGNORECASE)
_ZONE = re.compile(r"Node (?P<node>\d{1,20}) (?P<zone>[A-Za-z][\w]*) free:\s*\d{1,20}\s*kB")
_NODE = re.compile(r"Node (?P<node>\d{1,20}) active_anon:")
_SWAP = re.compile(r"(?P<kind>Free|Total) swap\s*=\s*(?P<kb>\d{1,20})\s*kB")
_PAGES = re.compile(
    r"(?P<count>\d{1,20}) (?P<kind>pages RAM|pages reserved|total pagecache pages|pages in swap cache"
    r"|pages HighMem/MovableOnly|pages hwpoisoned|pages cma reserved|pages shared|pages non-shared)"
)
_TASKS_HEADER = re.compile(r"\[\s*pid\s*\]\s+(?P<rest>.*)")
_TASK_ROW = re.compile(r"\[\s*(?P<pid>\d{1,20})\]\s+(?P<rest>.*)")
_TASK_IN = re.compile(r"Task in (?P<task>\S+) killed as a result of limit of (?P<memcg>\S+)")
_MEMCG_USAGE = re.compile(
    r"(?P<kind>memory|memory\+swap|kmem|swap|tcpmem): usage (?P<usage>\d{1,20})kB,"
    r" limit (?P<limit>\d{1,20})kB, failcnt (?P<failcnt>\d{1,20})"
)
_MEMCG_STATS = re.compile(r"Memory cgroup stats for (?P<path>.*?):(?P<rest>(?: .*)?)$")
_MEMCG_STAT = re.compile(r"(?P<name>[a-z_]+) (?P<value>\d{1,20})")
_KILL_CHOSEN = re.compile(
    r"(?P<memcg>Memory cgroup out of memory: )?(?:Out of memory(?: \([\w ]+\))?: )?"
    r"[Kk]ill process (?P<pid>\d{1,20}) \((?P<comm>.*)\) score (?P<score>\d{1,20})"
    r" or (?:sacrifice child|a child)"
)
_KILLED = re.compile(
    r"(?P<prefix>(?:Memory cgroup out of memory|Out of memory(?: \([\w ]+\))?): )?"
    r"Killed process (?P<pid>\d{1,20})(?:, UID (?P<uid>\d{1,20}),)? \((?P<comm>.*)\)"
    r"(?P<rest>(?:,? total-vm:.*)?)$"
)
_KILLED_UID = re.compile(r"UID:\s*(\d{1,20})")
_KILLED_ADJ = re.compile(r"oom_score_adj:\s*(-?\d{1,20})")
_REAPED = re.compile(
    r"oom_reaper: reaped process (?P<pid>\d{1,20}) \((?P<comm>.*)\),?"
    r" now anon-rss:\s*(?P<anon>\d{1,20})\s*kB,"
    r" file-rss:\s*(?P<file>\d{1,20})\s*kB, shmem-rss:\s*(?P<shmem>\d{1,20})\s*kB"
)
_SUPPRESSED = re.compile(r"(?P<fn>\w+): (?P<count>\d{1,20}) callbacks suppressed")
_PANIC = re.compile(
    r"(?:Kernel panic - not syncing: (?:Out of memory|System is deadlocked on memory).*"
    r"|Out of memory: (?:system-wide|compulsory) panic_on_oom.*)"
)
_NVRM_FUNCTION = re.compile(r"returned from (?P<fn>[\w]+)")
_NVRM_CONTEXT = re.compile(r"NVRM: (?P<fn>\w+): \*\*\*")
_XID = re.compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<code>\d{1,20})")
_PAGE_ALLOC = re.compile(
    r"(?P<comm>.*?): page allocation failure[.:] order:(?P<order>\d{1,2})(?!\d),"
    r" mode:(?P<mode>0x[0-9a-fA-F]+)"
)
_HUNG = re.compile(r"INFO: task (?P<comm>.*):(?P<pid>\d{1,20}) blocked for more than (?P<s>\d{1,20}) seconds")
_VM_ENOUGH = re.compile(r"__vm_enough_memory: pid: (?P<pid>\d{1,20}), comm: (?P<comm>.*?), ")

_CRASHED = re.compile(
    r"(?:traps: )?(?P<comm>[^\[\]]{1,64}?)\[(?P<pid>\d{1,20})\]:? (?:segfault at|general protection"
    r"|trap |unhandled (?:page fault|signal)|invalid opcode|divide error)"
)

# Tasks tables print a process name last; the columns before it are numbers.
_INT = re.compile(r"-?\d{1,20}")


# printk cuts a record at 1024 bytes; anything longer is not one kernel line, and cutting it
# keeps every regex below linear in the input however hostile the line.
MAX_MESSAGE = 4096


def parse_record(record: Record) -> ev.Event | None:
    """The event one record holds, or None for lines that do not matter here."""
    if not record.is_kernel:
        return _parse_userspace(record)
    text = record.message[:MAX_MESSAGE].strip()
    if not text:
        return None
    for needle, parser in _PARSERS:
        if needle in text:
            event = parser(record, text)
            if event is not None:
                return event
    return _parse_unkeyed(record, text)


def split_task_row(rest: str, columns: tuple[str, ...]) -> dict[str, int | str] | None:
    """Columns of a tasks-table row after its `[pid]`, as the header names them.

    The name is last and may hold spaces, so only the numeric columns are split off.
    Without a header (a cut report) every leading integer is a column, named col2...
    """
    numeric = [c for c in columns[1:] if c != "name"]
    if numeric:
        parts = rest.split(None, len(numeric))
        if len(parts) < len(numeric) or not all(_INT.fullmatch(p) for p in parts[: len(numeric)]):
            return None
        row: dict[str, int | str] = {c: int(p) for c, p in zip(numeric, parts[: len(numeric)], strict=True)}
        row["name"] = parts[len(numeric)] if len(parts) > len(numeric) else ""
        return row
    row = {}
    tokens = rest.split()
    index = 0
    while index < len(tokens) and _INT.fullmatch(tokens[index]):
        row[f"col{index + 2}"] = int(tokens[index])
        index += 1
    row["name"] = " ".join(tokens[index:])
    return row


def _invoked(record: Record, text: str) -> ev.Event | None:
    match = _INVOKED.match(text)
    if not match:
        return None
    adj = _ADJ_IN_HEADER.findall(text[match.end() :])
    return ev.OomInvoked(
        record,
        comm=match["comm"],
        gfp_mask=match["gfp"].lower(),
        gfp_flags=match["flags"],
        order=int(match["order"]),
        # Some 2.6.3x kernels print both oom_adj and oom_score_adj: the last one is the score adj.
        oom_score_adj=int(adj[-1]) if adj else None,
        nodemask=match["nodemask"],
    )


def _cpuset(record: Record, text: str) -> ev.Event | None:
    match = _CPUSET.match(text)
    if not match:
        return None
    return ev.CpusetLine(record, match["comm"], match["cpuset"], match["mems"])


def _cpu_line(record: Record, text: str) -> ev.Event | None:
    match = _CPU_LINE.match(text)
    if match:
        return ev.TaskLine(
            record,
            cpu=int(match["cpu"]),
            pid=int(match["pid"]),
            uid=int(match["uid"]) if match["uid"] else None,
            comm=match["comm"],
            kernel=match["kernel"],
        )
    return None


def _pid_line(record: Record, text: str) -> ev.Event | None:
    match = _PID_LINE_26.match(text)
    if not match:
        return None
    return ev.TaskLine(record, None, int(match["pid"]), None, match["comm"], match["kernel"])


def _hardware(record: Record, text: str) -> ev.Event | None:
    if text.startswith("Hardware name: "):
        return ev.HardwareName(record, text[len("Hardware name: ") :])
    return None


def _mem_info(record: Record, text: str) -> ev.Event | None:
    return ev.MemInfoHeader(record) if text == "Mem-Info:" else None


def _node_or_zone(record: Record, text: str) -> ev.Event | None:
    match = _ZONE.match(text)
    if match:
        values = {k: int(v) for k, v in _KB_VALUE.findall(text)}
        return ev.ZoneLine(record, int(match["node"]), match["zone"], values)
    match = _NODE.match(text)
    if match:
        return ev.NodeLine(record, int(match["node"]), {k: int(v) for k, v in _KB_VALUE.findall(text)})
    return None


def _swap(record: Record, text: str) -> ev.Event | None:
    match = _SWAP.match(text)
    if not match:
        return None
    return ev.SwapLine(record, match["kind"].lower(), int(match["kb"]))


def _pages(record: Record, text: str) -> ev.Event | None:
    match = _PAGES.match(text)
    if not match:
        return None
    kind = match["kind"].replace("total ", "").replace(" pages", "").replace("pages ", "")
    return ev.PagesLine(record, kind.replace(" ", "_").replace("/", "_").lower(), int(match["count"]))


def _tasks(record: Record, text: str) -> ev.Event | None:
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
            fields[key.strip()] = value
            last = key.strip()
        elif item.strip() == "global_oom":
            global_oom = True
        elif last is not None:
            # mems_allowed=0,2 and cpuset lists hold commas of their own.
            fields[last] += "," + item
    return ev.OomKillSummary(record, fields, global_oom)


def _task_in(record: Record, text: str) -> ev.Event | None:
    match = _TASK_IN.match(text)
    return ev.TaskInMemcg(record, match["task"], match["memcg"]) if match else None


def _memcg_usage(record: Record, text: str) -> ev.Event | None:
    match = _MEMCG_USAGE.match(text)
    if not match:
        return None
    return ev.MemcgUsage(
        record, match["kind"], int(match["usage"]), int(match["limit"]), int(match["failcnt"])
    )


def _memcg_stats(record: Record, text: str) -> ev.Event | None:
    match = _MEMCG_STATS.match(text)
    if not match:
        return None
    inline = {k: int(v) for k, v in _KB_VALUE.findall(match["rest"])}
    return ev.MemcgStatsHeader(record, match["path"], inline)


def _kill_chosen(record: Record, text: str) -> ev.Event | None:
    match = _KILL_CHOSEN.match(text)
    if not match:
        return None
    return ev.KillChosen(record, int(match["pid"]), match["comm"], int(match["score"]), bool(match["memcg"]))


def _killed(record: Record, text: str) -> ev.Event | None:
    match = _KILLED.match(text)
    if not match:
        return None
    rest = match["rest"]
    sizes = {k: int(v) for k, v in _KB_VALUE.findall(rest)}
    uid = match["uid"] or (m.group(1) if (m := _KILLED_UID.search(rest)) else None)
    adj = _KILLED_ADJ.search(rest)
    return ev.Killed(
        record,
        pid=int(match["pid"]),
        comm=match["comm"],
        uid=int(uid) if uid is not None else None,
        total_vm_kb=sizes.get("total-vm"),
        anon_rss_kb=sizes.get("anon-rss"),
        file_rss_kb=sizes.get("file-rss"),
        shmem_rss_kb=sizes.get("shmem-rss"),
        pgtables_kb=sizes.get("pgtables"),
        oom_score_adj=int(adj.group(1)) if adj else None,
        memcg=bool(match["prefix"]) and match["prefix"].startswith("Memory cgroup"),
    )


def _reaped(record: Record, text: str) -> ev.Event | None:
    match = _REAPED.match(text)
    if not match:
        return None
    return ev.Reaped(
        record,
        int(match["pid"]),
        match["comm"],
        int(match["anon"]),
        int(match["file"]),
        int(match["shmem"]),
    )


def _no_killable(record: Record, text: str) -> ev.Event | None:
    return ev.NoKillable(record) if text.startswith("Out of memory and no killable") else None


def _panic(record: Record, text: str) -> ev.Event | None:
    return ev.OomPanic(record, text) if _PANIC.match(text) else None


def _suppressed(record: Record, text: str) -> ev.Event | None:
    match = _SUPPRESSED.match(text)
    if not match or ("oom" not in match["fn"] and "out_of_memory" not in match["fn"]):
        return None
    return ev.CallbacksSuppressed(record, match["fn"], int(match["count"]))


def _nvrm(record: Record, text: str) -> ev.Event | None:
    start = text.find("NVRM")
    body = text[start:]
    xid = _XID.match(body)
    if xid:
        return ev.EarlyWarning(record, "nvrm-xid", body, f"xid-{xid['code']}")
    lowered = body.lower()
    if "nv_err_no_memory" in lowered or "out of memory" in lowered or "cannot allocate" in lowered:
        function = _NVRM_FUNCTION.search(body) or _NVRM_CONTEXT.search(body)
        return ev.EarlyWarning(record, "nvrm-no-memory", body, function["fn"] if function else "nvrm")
    return None


def _page_alloc(record: Record, text: str) -> ev.Event | None:
    match = _PAGE_ALLOC.match(text)
    if not match:
        return None
    key = f"{match['comm']}:order{match['order']}"
    return ev.EarlyWarning(record, "page-allocation-failure", text, key)


def _hung(record: Record, text: str) -> ev.Event | None:
    match = _HUNG.search(text)
    return ev.EarlyWarning(record, "hung-task", text, match["comm"]) if match else None


def _vm_enough(record: Record, text: str) -> ev.Event | None:
    match = _VM_ENOUGH.search(text)
    return ev.EarlyWarning(record, "overcommit-refused", text, match["comm"]) if match else None


def _crash(record: Record, text: str) -> ev.Event | None:
    match = _CRASHED.match(text)
    if not match:
        return None
    return ev.ProcessCrash(record, match["comm"], int(match["pid"]), text)


# (a literal every matching line contains, parser): the literal is a cheap filter so most
# lines of a big log never reach a regex. Order matters where literals overlap.
_PARSERS: tuple[tuple[str, Callable[[Record, str], ev.Event | None]], ...] = (
    ("invoked oom-killer", _invoked),
    ("Killed process", _killed),
    ("ill process", _kill_chosen),
    ("oom-kill:", _oom_kill),
    ("oom_reaper", _reaped),
    ("no killable", _no_killable),
    ("panic", _panic),
    ("callbacks suppressed", _suppressed),
    ("NVRM", _nvrm),
    ("page allocation failure", _page_alloc),
    ("blocked for more than", _hung),
    ("__vm_enough_memory", _vm_enough),
    ("]: ", _crash),
    ("traps: ", _crash),
    (" cpuset=", _cpuset),
    ("CPU: ", _cpu_line),
    ("Pid: ", _pid_line),
    ("Hardware name", _hardware),
    ("Mem-Info", _mem_info),
    ("Node ", _node_or_zone),
    (" swap", _swap),
    ("pages", _pages),
    ("Task in ", _task_in),
    (": usage ", _memcg_usage),
    ("Memory cgroup stats", _memcg_stats),
)


def _parse_unkeyed(record: Record, text: str) -> ev.Event | None:
    """Lines with no distinctive literal: tasks rows, counters, call frames, memcg stats."""
    first = text[0]
    if first == "[":
        event = _tasks(record, text)
        if event is not None:
            return event
    if "+0x" in text:
        frame = _FRAME.match(text)
        if frame:
            return ev.CallFrame(record, frame["fn"], frame["mod"], not frame["unsure"])
    if ":" in text and _COUNTERS.fullmatch(text):
        return ev.Counters(record, {k: int(v) for k, v in _COUNTER.findall(text)})
    if first.islower():
        match = _MEMCG_STAT.fullmatch(text)
        if match:
            return ev.MemcgStat(record, match["name"], int(match["value"]))
    return None


# ---- records the kernel never writes: systemd, systemd-oomd, earlyoom, nohang, lmkd, journald ----

_UNIT_OOM = re.compile(r"(?P<unit>[\w@.:\\-]+): A process of this unit has been killed by the OOM killer\.?")
_UNIT_MAIN_KILLED = re.compile(
    r"(?P<unit>[\w@.:\\-]+): Main process exited, code=killed, status=(?P<status>\S+)"
)
_UNIT_FAILED = re.compile(r"(?P<unit>[\w@.:\\-]+): Failed with result '(?P<result>[\w-]+)'")
_UNIT_CONSUMED = re.compile(r"(?P<unit>[\w@.:\\-]+): Consumed (?P<text>.*)")
_MEMORY_PEAK = re.compile(r"([\d.]+)([KMGT])? memory peak")
_UNIT_RESTART = re.compile(
    r"(?P<unit>[\w@.:\\-]+): Scheduled restart job, restart counter is at (?P<n>\d{1,9})"
)
_UNIT_OOMD = re.compile(r"(?P<unit>[\w@.:\\-]+): systemd-oomd killed (?P<n>\d{1,9}) process")
_OOMD_KILL = re.compile(r"(?:Killed|Marked) (?P<cgroup>/\S+) (?:for killing )?due to (?P<reason>.*)")
# earlyoom's kill line across its versions: `sending SIGTERM to process N uid N "comm": badness N,
# VmRSS N MiB` (1.6+), the same without uid (1.3-1.5), and `Killing process N comm with oom_score N`.
_EARLYOOM_KILL = re.compile(
    r"(?:sending (?P<sig>SIG\w+) to process|Killing process) (?P<pid>\d{1,9})(?: uid (?P<uid>\d{1,9}))?"
    r' (?:"(?P<comm>[^"]*)"|\((?P<comm2>[^)]*)\)|(?P<comm3>\S+))[:,]?(?: with)?'
    r"(?: (?:badness|oom_score) (?P<badness>-?\d{1,9}))?,?(?: VmRSS (?P<rss>\d{1,12}) MiB)?"
)
_EARLYOOM_LOW = re.compile(r"low memory! at or below (?P<what>SIG\w+) limits")
_NOHANG_KILL = re.compile(
    r"(?P<sig>SIGTERM|SIGKILL).*?\b(?:PID|pid):? (?P<pid>\d{1,9}).*?\b(?:Name|name):? (?P<comm>\S+)"
)
_LMKD_KILL = re.compile(
    r"Kill(?:ing)? '(?P<comm>[^']+)' \((?P<pid>\d{1,9})\), (?:uid (?P<uid>\d{1,9}), )?"
    r"(?:oom_score_)?adj (?P<adj>-?\d{1,5})"
    r"(?:.*?(?P<rss>\d{1,12})kB rss)?"
)
_KIB = {None: 1 / 1024, "K": 1, "M": 1024, "G": 1024 * 1024, "T": 1024**3}


def _parse_userspace(record: Record) -> ev.Event | None:
    ident = record.ident or ""
    text = record.message[:MAX_MESSAGE].strip()
    if ident in ("systemd", "init") or text.startswith(("user@", "session-")) or ": " in text[:200]:
        unit = _unit_record(record, text)
        if unit is not None:
            return unit
    if ident == "systemd-oomd":
        match = _OOMD_KILL.match(text)
        if match:
            return ev.UserspaceKill(
                record, "systemd-oomd", None, None, match["cgroup"], "SIGKILL", match["reason"]
            )
    elif ident == "earlyoom":
        return _earlyoom(record, text)
    elif ident == "nohang":
        match = _NOHANG_KILL.search(text)
        if match:
            return ev.UserspaceKill(
                record, "nohang", match["comm"], int(match["pid"]), None, match["sig"], text
            )
    elif ident in ("lmkd", "lowmemorykiller"):
        match = _LMKD_KILL.search(text)
        if match:
            rss = int(match["rss"]) if match["rss"] else None
            uid = int(match["uid"]) if match["uid"] else None
            return ev.UserspaceKill(
                record,
                "lmkd",
                match["comm"],
                int(match["pid"]),
                None,
                "SIGKILL",
                text,
                rss,
                None,
                int(match["adj"]),
                uid,
            )
    elif ident == "systemd-journald" and text.startswith("Under memory pressure, flushing caches"):
        return ev.EarlyWarning(record, "journald-memory-pressure", text, "journald")
    return None


def _unit_record(record: Record, text: str) -> ev.Event | None:
    if "OOM killer" in text:
        match = _UNIT_OOM.match(text)
        if match:
            return ev.UnitRecord(record, match["unit"], "oom-kill", "killed by the OOM killer")
    if "Main process exited, code=killed" in text:
        match = _UNIT_MAIN_KILLED.match(text)
        if match:
            return ev.UnitRecord(record, match["unit"], "main-killed", match["status"])
    if "Failed with result" in text:
        match = _UNIT_FAILED.match(text)
        if match:
            return ev.UnitRecord(record, match["unit"], "failed", match["result"])
    if "restart counter is at" in text:
        match = _UNIT_RESTART.match(text)
        if match:
            return ev.UnitRecord(record, match["unit"], "restart", text, count=int(match["n"]))
    if "systemd-oomd killed" in text:
        match = _UNIT_OOMD.match(text)
        if match:
            return ev.UnitRecord(record, match["unit"], "oomd-killed", text, count=int(match["n"]))
    if ": Consumed " in text:
        match = _UNIT_CONSUMED.match(text)
        if match:
            peak = _MEMORY_PEAK.search(match["text"])
            peak_kb = round(float(peak[1]) * _KIB[peak[2]]) if peak else None
            return ev.UnitRecord(record, match["unit"], "consumed", match["text"], peak_kb=peak_kb)
    return None


def _earlyoom(record: Record, text: str) -> ev.Event | None:
    match = _EARLYOOM_KILL.search(text)
    if match:
        return ev.UserspaceKill(
            record,
            "earlyoom",
            match["comm"] or match["comm2"] or match["comm3"],
            int(match["pid"]),
            None,
            match["sig"] or "SIGTERM",
            text,
            int(match["rss"]) * 1024 if match["rss"] else None,
            int(match["badness"]) if match["badness"] else None,
            None,
            int(match["uid"]) if match["uid"] else None,
        )
    low = _EARLYOOM_LOW.search(text)
    if low:
        return ev.EarlyWarning(record, "earlyoom-low-memory", text, "earlyoom")
    return None
