"""Pure explanations of one episode: where the adj came from, why this victim, who held memory, the request.

What memory looked like at the kill is memorypicture.py's, re-exported here for its old callers."""

from __future__ import annotations

from oomtrace.allocation import call_path, request
from oomtrace.badness import Ranking, columns_named, rank, rss_pages
from oomtrace.episodes import MAX_TASK_ROWS
from oomtrace.frozen import Frozen
from oomtrace.lazyregex import lazy_compile
from oomtrace.memorypicture import MemoryPicture as MemoryPicture  # re-exported: its old home
from oomtrace.memorypicture import memory_picture as memory_picture
from oomtrace.model import Analysis, Episode, Victim
from oomtrace.serverlines import PlanItem
from oomtrace.units import clock, kib

# A victim whose address space is this many times its resident set, and at least this much
# larger, held memory outside its RSS (CUDA buffers on unified memory, or untouched mappings).
_VM_TO_RSS_RATIO = 4
_VM_OVER_RSS_MIN_KB = 8 * 1024 * 1024


def adj_origin(adj: int | None, task_memcg: str | None = None) -> str | None:
    """Where an oom_score_adj value most likely came from, in one sentence."""
    if adj is None or adj == 0:
        return None
    if adj == 200:
        # Only a cgroup under user@UID.service shows where it came from; 200 set by hand (or by
        # anything else) looks the same in the log, so elsewhere the origin is not said.
        if task_memcg and "/user@" in task_memcg:
            return (
                "200 comes from systemd's user manager (DefaultOOMScoreAdjust): anything started "
                "from a login session or terminal inherits it and dies before system services; its "
                "cgroup is under user@…service"
            )
        where = f"its cgroup {task_memcg} is not" if task_memcg else "the log names no cgroup"
        return (
            "200 was set for it, and the log does not say by what: systemd's user manager gives "
            f"200 to what it starts, but {where} under a user@…service"
        )
    if adj == 1000:
        return (
            "oom_score_adj 1000 means the process (or its launcher) asked to be killed first; "
            "Kubernetes also gives BestEffort pods 1000"
        )
    if adj == -1000:
        return "oom_score_adj -1000 makes a process unkillable by the OOM killer"
    if adj < 0:
        return (
            f"oom_score_adj {adj} protects the process: set by its unit's OOMScoreAdjust=, "
            "a container runtime, or the process itself"
        )
    return (
        f"oom_score_adj {adj} makes it a preferred victim: set by its unit's OOMScoreAdjust=, "
        "a container runtime (Kubernetes Burstable pods get 2-999), or the process itself"
    )


def resident_kb(victim: Victim) -> int | None:
    """The victim's resident set, or None where the kill line's anon-rss or file-rss is unread:
    every kernel that prints one prints both (shmem-rss came later), so a missing one is a cut or
    mangled figure (`anon-rss:153,700,88kB`), not a zero."""
    if victim.anon_rss_kb is None or victim.file_rss_kb is None:
        return None
    return victim.anon_rss_kb + victim.file_rss_kb + (victim.shmem_rss_kb or 0)


def outside_rss_note(victim: Victim | None) -> str | None:
    """Say so when total-vm dwarfs the resident set: the numbers do not show what it held."""
    if victim is None or victim.total_vm_kb is None:
        return None
    rss = resident_kb(victim)
    if rss is None:
        return _outside_anon_note(victim)
    gap = victim.total_vm_kb - rss
    if victim.total_vm_kb < _VM_TO_RSS_RATIO * max(rss, 1) or gap < _VM_OVER_RSS_MIN_KB:
        return None
    return (
        f"total-vm {kib(victim.total_vm_kb)} against {kib(rss)} resident: {kib(gap)} mapped but not "
        "in its RSS. On unified memory (DGX Spark / GB10, Grace, Jetson) CUDA buffers live there and "
        "no RSS counts them; elsewhere it is mostly untouched mappings (mmap'd weights, arenas)"
    )


def _outside_anon_note(victim: Victim) -> str | None:
    """The same with the fields a kill line gives when it lacks file-rss (a write-up's quote,
    an old kernel): total-vm against anon-rss shows what is mapped but not anonymous and
    resident; what part of it is page cache the missing fields leave open."""
    vm, anon = victim.total_vm_kb, victim.anon_rss_kb
    if vm is None or anon is None:
        return None
    gap = vm - anon - (victim.shmem_rss_kb or 0)
    if vm < _VM_TO_RSS_RATIO * max(anon, 1) or gap < _VM_OVER_RSS_MIN_KB:
        return None
    missing = "file-rss" if victim.shmem_rss_kb is not None else "file-rss or shmem-rss"
    return (
        f"total-vm {kib(vm)} against anon-rss {kib(anon)}: {kib(gap)} mapped but not anonymous and "
        f"resident. The kill line gives no {missing}, so the log does not say how much of it was "
        "page cache (mmap'd files, model weights). On unified memory (DGX Spark / GB10, Grace, "
        "Jetson) CUDA buffers live there and no RSS counts them; elsewhere it is mostly untouched "
        "mappings"
    )


def driver_frames(episode: Episode) -> tuple[str, ...]:
    """Call-trace frames from driver modules (such as `nvidia`), which say who was allocating."""
    return tuple(f"{f.function} [{f.module}]" for f in episode.call_trace if f.module)


# What the common Xid codes mean (NVIDIA's Xid catalogue), for one-line summaries.
_XID_MEANINGS = {
    "13": "graphics engine exception",
    "31": "GPU memory page fault (MMU fault)",
    "43": "GPU stopped processing",
    "45": "preemptive cleanup after a fault",
    "48": "double-bit ECC error",
    "63": "ECC page retirement or row remapping",
    "64": "ECC page retirement or row remapping failure",
    "74": "NVLink error",
    "79": "GPU has fallen off the bus",
    "92": "high single-bit ECC error rate",
    "94": "contained ECC error",
    "95": "uncontained ECC error",
    "119": "GSP RPC timeout",
    "120": "GSP error",
}


def lost_records_note(analysis: Analysis) -> str | None:
    """What the log says it lost (journald falling behind, printk dropping lines, rate limits):
    the record is incomplete, and a kill may be missing from it."""
    runs = [w for w in analysis.warnings if w.kind == "lost-messages"]
    if not runs:
        return None
    said = "; ".join(
        f"{w.text.strip()} ({clock(w.first)}" + (f", {w.count} times)" if w.count > 1 else ")")
        for w in runs[:3]
    )
    more = f" and {len(runs) - 3} more" if len(runs) > 3 else ""
    return f"the log says it lost records: {said}{more}"


def warning_summary(kind: str, key: str, text: str) -> str:
    """A warning in a few words, for the text report's timeline (JSON keeps the full line)."""
    if kind == "nvrm-no-memory":
        where = f" in {key}" if key != "nvrm" else ""
        return f"NVIDIA driver out of memory (NV_ERR_NO_MEMORY{where})"
    if kind == "nvrm-xid":
        code = key.removeprefix("xid-")
        meaning = _XID_MEANINGS.get(code)
        return f"NVIDIA Xid {code}" + (f": {meaning}" if meaning else "")
    if kind == "page-allocation-failure":
        comm, _, order = key.rpartition(":order")
        if not order.isdigit():
            return f"{key.rpartition(':')[0]}: vmalloc allocation failure"
        return f"{comm}: page allocation failure, order {order} ({kib(4 << int(order))})"
    return text


_CONTAINER_ID = lazy_compile(
    r"(?:docker|cri-containerd|crio|libpod)-([0-9a-f]{12,64})\.scope$|^([0-9a-f]{64})$"
)
_POD = lazy_compile(r"pod([0-9a-f_-]{36})")


def container_of(path: str | None) -> tuple[str | None, str | None]:
    """(Kubernetes pod uid, container id in full) from a cgroup path, as far as it shows them:
    the kernel's path carries ids, never a pod's name or namespace."""
    if not path:
        return None, None
    for part in reversed([p for p in path.split("/") if p]):
        container = _CONTAINER_ID.search(part)
        if container:
            pod = _POD.search(path)
            return (pod.group(1).replace("_", "-") if pod else None), container.group(1) or container.group(2)
    pod = _POD.search(path)
    return (pod.group(1).replace("_", "-") if pod else None), None


def cgroup_owner(path: str | None) -> str | None:
    """Who a cgroup path belongs to: a systemd unit, a container, a pod, or a user manager."""
    if not path:
        return None
    parts = [p for p in path.split("/") if p]
    pod, container = container_of(path)
    if container:
        where = f" in Kubernetes pod {pod}" if pod else ""
        return f"container {container[:12]}{where}"
    if len(parts) >= 2 and parts[-2] in ("docker", "lxc", "machine.slice"):
        return f"{'container' if parts[-2] != 'lxc' else 'LXC container'} {parts[-1][:12]}"
    if "lxc" in parts:
        index = parts.index("lxc")
        if index + 1 < len(parts):
            return f"LXC container {parts[index + 1]}"
    units = [p for p in parts if p.endswith((".service", ".scope"))]
    if units:
        unit = units[-1]
        manager = next((p for p in parts if p.startswith("user@") and p.endswith(".service")), None)
        if manager and manager != unit:
            return f"unit {unit} of the user manager {manager}"
        if unit.startswith("session-") and unit.endswith(".scope"):
            return f"login session {unit.removesuffix('.scope').removeprefix('session-')}"
        return f"unit {unit}"
    return None


def victim_reason(episode: Episode, ranking: Ranking | None) -> str | None:
    """Why the kernel took this victim, from the recomputed badness of every task."""
    if ranking is None or ranking.victim is None or episode.victim is None:
        if episode.chosen and episode.victim and episode.chosen.pid != episode.victim.pid:
            return _child_note(episode)
        if episode.tasks and not columns_named(episode):
            return (
                "not known: the tasks table lacks its header, and the count of numbers in its rows "
                "does not tell which kernel's columns they are, so its tasks cannot be ranked by badness"
            )
        return None
    victim = ranking.victim
    page_kb = episode.page_size_kb
    parts = [_rank_words(episode, ranking)]
    top = ranking.top_without_adj
    adj = victim.oom_score_adj
    if top is not None and top.pid != victim.pid and ranking.victim_rank == 1:
        if adj:
            parts.append(
                f"without oom_score_adj {adj}, {top.name} (pid {top.pid}, {kib(top.points * page_kb)}) "
                "would have been chosen"
            )
    elif top is not None and top.pid == victim.pid:
        parts.append(
            f"it was also the largest by size ({kib(victim.points * page_kb)} of rss, swap and page tables)"
        )
    text = "; ".join(parts)
    if episode.chosen and episode.chosen.pid != episode.victim.pid:
        text += "; " + _child_note(episode)
    if ranking.printed_score is not None and ranking.recomputed_score is not None:
        text += f" (kernel score {ranking.printed_score}, recomputed {ranking.recomputed_score})"
    return text


def _rank_words(episode: Episode, ranking: Ranking) -> str:
    """ "highest badness of the 12 killable tasks in the report"; of a table trimmed to bound
    memory, the rows it had: the rows not kept scored below the kept ones as they arrived."""
    count = len(ranking.candidates)
    rank = ranking.victim_rank
    rows = episode.table_rows
    if "tasks_header" in episode.missing:
        # Cut before its header: rows before the cut may be gone, and any of them may rank higher.
        held = "the rows of the tasks table the log holds"
        if rank == 1:
            if count == 1:
                return f"the only killable task in {held}"
            return f"highest badness of the {count} killable tasks in {held}"
        return f"ranked {rank} by badness of the {count} killable tasks in {held}"
    if rows is None:
        if rank == 1:
            # Counts agree with their noun: one candidate is "the only", never "the 1 ... tasks".
            if count == 1:
                return "the only killable task in the report"
            return f"highest badness of the {count} killable tasks in the report"
        return f"ranked {rank} of {count} killable tasks by badness"
    # The kept rows hold the MAX_TASK_ROWS // 2 highest by badness: a rank among those is a rank
    # in the whole table; below them it is not known.
    kept = len(episode.tasks)
    of = f"the report's tasks table of {rows:,} rows ({kept:,} kept: the highest by badness and by rss)"
    if rank == 1:
        return f"highest badness in {of}"
    if rank is not None and rank <= MAX_TASK_ROWS // 2:
        return f"ranked {rank} by badness in {of}"
    return f"not among the {MAX_TASK_ROWS // 2} highest by badness in {of}"


def _child_note(episode: Episode) -> str:
    assert episode.chosen is not None and episode.victim is not None
    return (
        f"the kernel chose {episode.chosen.comm} (pid {episode.chosen.pid}, score {episode.chosen.score}) "
        f"and killed its child {episode.victim.comm} (pid {episode.victim.pid}) in its place"
    )


class Holder(Frozen):
    pid: int
    name: str
    rss_kb: int
    oom_score_adj: int | None


def top_holders(episode: Episode, count: int = 5) -> tuple[Holder, ...]:
    """The largest resident sets in the tasks table at the kill (none where its columns are not
    named: which number is the rss is not known)."""
    if not columns_named(episode):
        return ()
    holders = []
    for row in episode.tasks:
        rss = rss_pages(row)
        adj = row.get("oom_score_adj")
        pid = row.get("pid")
        holders.append(
            Holder(
                pid if isinstance(pid, int) else 0,
                str(row.get("name", "")),
                rss * episode.page_size_kb,
                adj if isinstance(adj, int) else None,
            )
        )
    holders.sort(key=lambda h: h.rss_kb, reverse=True)
    return tuple(holders[:count])


def large_holders(episode: Episode) -> list[Holder]:
    """The processes in the tasks table other than the victim holding at least 1 GiB and a
    twentieth of RAM: memory the victim's death did not free."""
    ram_kb = (episode.pages.get("ram", 0) - episode.pages.get("reserved", 0)) * episode.page_size_kb
    floor = max(1024 * 1024, ram_kb // 20)
    victim = episode.victim.pid if episode.victim is not None else None
    return [h for h in top_holders(episode, 50) if h.pid != victim and h.rss_kb >= floor]


def cotenants_note(episode: Episode) -> str | None:
    """Other large processes beside the victim: memory the victim's death did not free."""
    if episode.victim is None:
        return None
    others = large_holders(episode)
    if not others:
        return None
    listed = ", ".join(f"{h.name} (pid {h.pid}, {kib(h.rss_kb)})" for h in others[:4])
    return f"other large processes were running beside it: {listed}"


# What each constraint means, said alike by every format.
CONSTRAINT_WORDS = {
    "global": "global OOM: the whole machine ran out of memory",
    "memcg": "memory cgroup OOM: a cgroup hit its memory limit",
    "cpuset": "cpuset OOM: the nodes its cpuset allows ran out",
    "mempolicy": "mempolicy OOM: the NUMA nodes its memory policy allows ran out",
}
UNKNOWN_CONSTRAINT = "the log does not say which limit was hit"


def constraint_words(constraint: str | None, basis: str | None = None) -> str:
    """What the constraint means; with the basis when the log does not print it but the report
    implies it (episodes: `constraint_from` says "inferred")."""
    words = CONSTRAINT_WORDS.get(constraint or "", UNKNOWN_CONSTRAINT)
    if constraint is not None and basis is not None and "inferred" in basis:
        words += f" ({basis})"
    return words


# The parts of a report the log lacks (Episode.missing), in words: every format says them alike.
_MISSING_WORDS = {
    "header": "the `invoked oom-killer` header",
    "cpu_line": "the CPU/PID line",
    "mem_info": "Mem-Info",
    "tasks": "the tasks table",
    "tasks_header": "the tasks table's header",
    "summary": "the oom-kill: summary",
    "kill": "the `Killed process` line",
    "kernel_report": "the kernel's report (only systemd's records)",
    "runtime_report": (
        "the kernel's report (only the container runtime's record; fetch the node's `journalctl -k` "
        "around that time)"
    ),
}


def _missing_words(episode: Episode, missing: str) -> str:
    words = _MISSING_WORDS.get(missing, missing)
    if missing == "tasks_header":
        named = (
            "the columns were named by their count"
            if columns_named(episode)
            else "without it the columns cannot be named"
        )
        words += f" (and any rows before the cut; {named})"
    return words


def missing_note(episode: Episode) -> str | None:
    """ "the log lacks ...", with how many reports were rate-limited; None when nothing is missing."""
    if not episode.missing:
        return None
    note = "the log lacks " + ", ".join(_missing_words(episode, m) for m in episode.missing)
    if episode.suppressed_reports:
        note += f" ({episode.suppressed_reports} reports were rate-limited: 'callbacks suppressed')"
    return note


class Explanation(Frozen):
    """Every explanation of one episode, computed once for all formats."""

    request: str | None
    call_path: str | None
    adj_origin: str | None
    outside_rss: str | None
    ranking: Ranking | None
    reason: str | None
    holders: tuple[Holder, ...]
    cotenants: str | None
    memory: MemoryPicture | None
    memcg_owner: str | None
    task_memcg_owner: str | None
    driver_frames: tuple[str, ...]


def explain_episode(episode: Episode) -> Explanation:
    ranking = rank(episode)
    victim = episode.victim
    return Explanation(
        request=request(episode.trigger, episode.page_size_kb, episode.kernel),
        call_path=call_path(episode.call_trace),
        adj_origin=adj_origin(victim.oom_score_adj, episode.task_memcg) if victim else None,
        outside_rss=outside_rss_note(victim),
        ranking=ranking,
        reason=victim_reason(episode, ranking),
        holders=top_holders(episode),
        cotenants=cotenants_note(episode),
        memory=memory_picture(episode),
        memcg_owner=cgroup_owner(episode.memcg),
        task_memcg_owner=cgroup_owner(episode.task_memcg),
        driver_frames=tuple(dict.fromkeys(driver_frames(episode))),
    )


def plan_comparison(
    plan: tuple[PlanItem, ...], episode: Episode | None, memory: MemoryPicture | None
) -> str | None:
    """What the server said it would hold, against what the kernel saw at the kill."""
    counted = [item for item in plan if item.counted]
    if not counted:
        return None
    total_gib = sum(item.gib for item in counted)
    parts = ", ".join(f"{item.label} {item.gib:.2f}" for item in counted)
    text = f"it said it would hold {total_gib:.1f} GiB ({parts} GiB)"
    if episode is None or episode.victim is None or memory is None:
        return text
    anon_kb = episode.victim.anon_rss_kb or 0
    held_kb = anon_kb + (memory.unaccounted_kb or 0)
    if not memory.unaccounted_kb:
        return text + f"; at the kill it held {kib(anon_kb)} anon-rss"
    held_gib = held_kb / (1024 * 1024)
    difference = held_gib - total_gib
    direction = "more" if difference >= 0 else "less"
    return (
        text + f"; at the kill it held {kib(anon_kb)} anon-rss and the machine had "
        f"{kib(memory.unaccounted_kb)} in no LRU list or slab (driver and GPU buffers): "
        f"{held_gib:.1f} GiB, {abs(difference):.1f} GiB {direction} than it said"
    )
