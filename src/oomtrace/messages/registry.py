"""The one registry: every message kind in the order they are tried, and the tables read from it.

Adding a message is its kind in its family's module (report.py, kills.py, early.py, boot.py,
units.py, userspace.py, runtime.py) and one line here, where it stands in the order.
"""

from __future__ import annotations

import functools
import re

from oomtrace.lazyregex import lazy_compile
from oomtrace.messages import boot, early, kills, report, runtime, units, userspace
from oomtrace.messages.kind import MessageKind

# Order matters where two kinds can match one line: the first that returns an event wins.
MESSAGES: tuple[MessageKind, ...] = (
    report.OOM_INVOKED,
    kills.KILL,
    kills.CONTAINER_KILL,
    kills.KILL_CHOSEN,
    kills.VM_KILLING,
    kills.OOM_KILL_SUMMARY,
    kills.OOM_REAPER,
    kills.NO_KILLABLE,
    kills.OOM_PANIC,
    boot.LOST_MESSAGES,
    boot.REPEATS,
    early.NVRM_XID,
    early.NVRM_NO_MEMORY,
    early.PAGE_ALLOCATION_FAILURE,
    early.HUNG_TASK,
    boot.BOOT_STARTED,
    early.OVERCOMMIT_REFUSED,
    early.CRASH,
    report.CPUSET_LINE,
    report.TASK_LINE,
    report.PID_LINE,
    report.HARDWARE,
    report.SECTION_TITLE,
    report.MEM_INFO,
    report.ZONE_OR_NODE,
    report.SWAP,
    report.PAGES,
    report.TASK_IN_MEMCG,
    report.MEMCG_USAGE,
    report.MEMCG_STATS,
    report.TASKS_HEADER,
    units.UNIT_OOM_KILL,
    units.UNIT_MAIN_KILLED,
    units.UNIT_FAILED,
    units.UNIT_STATUS_FAILED,
    units.UNIT_RESTART,
    units.UNIT_OOMD_KILLED,
    units.UNIT_CONSUMED,
    userspace.SYSTEMD_OOMD_KILL,
    userspace.SYSTEMD_OOMD_DECISION,
    userspace.EARLYOOM_KILL,
    userspace.EARLYOOM_LOW_MEMORY,
    userspace.NOHANG_KILL,
    userspace.NOHANG_VICTIM,
    userspace.SLURM_OOM_EVENT,
    userspace.LMKD_KILL,
    userspace.LOWMEMORYKILLER_KILL,
    runtime.KUBELET_OOM_EVENT,
    runtime.KUBELET_CREATED_OOM_EVENT,
    runtime.CONTAINERD_TASK_OOM,
    runtime.DOCKER_OOM_EVENT,
    runtime.CONTAINER_OOMKILLED,
    runtime.CONTAINER_FINISHED,
    runtime.ACTIVITY_MANAGER_DIED,
    runtime.ZYGOTE_EXITED,
    units.JOURNALD_MEMORY_PRESSURE,
    userspace.WATCH_WARNING,
)


def read_around(text: str) -> tuple[int, int] | None:
    """How many lines above and below a line its record is made whole from (a container
    status's name and end, a unit status's heading), for a scan that skips lines to read in full."""
    if runtime.in_status(text):
        return runtime.CONTEXT_LINES, runtime.FINISHED_LINES
    if units.in_unit_status(text):
        return units.STATUS_LINES, 0
    return None


WARNING_LABELS = {kind.name: kind.label for kind in MESSAGES if kind.warning}
MESSAGE_KINDS = {kind.name: kind for kind in MESSAGES}

# Where a known message begins in a line whose prefix no grammar read.
_BEGINS = lazy_compile(
    "|".join(re.escape(b) for b in sorted({b for k in MESSAGES for b in k.begins}, key=len)[::-1])
)
_TASKS_BEGIN = lazy_compile(r"\[\s*pid\s*\]|\[\s*\d{1,9}\]\s+\d")
_NAME_ENDS = tuple((k.after_name, k.name_is_comm) for k in MESSAGES if k.after_name)
# A task's comm is TASK_COMM_LEN (16) bytes with its NUL. /dev/kmsg, and so journald and dmesg,
# write a byte that is not printable ASCII as `\xNN`, rsyslog a control character as `#ooo`:
# each escape stands for one byte of the comm.
COMM_BYTES = 15
# CONFIG_PRINTK_CALLER's `[T31878]` (a thread) or `[  C3]` (a CPU) after the stamp, before the name.
_CALLER = lazy_compile(r"\[\s*[TC]\d{1,10}\]\s*")
_ESCAPED_BYTE = lazy_compile(r"\\x[0-9a-fA-F]{2}|#[0-7]{3}")
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
    for name_end, comm in _NAME_ENDS:
        at = text.find(name_end)
        if at > 0:
            head = text[:at]
            if comm:
                # The comm whole (`Web Content invoked oom-killer`, `tmux: server`, `x<TAB>y
                # cpuset=/`), after a printk caller id the grammar left (`[T31878] date`).
                caller = _CALLER.match(head)
                skip = caller.end() if caller else 0
                if fits_comm(head[skip:]):
                    starts.append(skip)
                    continue
            starts.append(max(head.rfind(sep) + len(sep) if sep in head else 0 for sep in _SEPARATORS))
    return min(starts) if starts else 0


_message_start_seen = functools.lru_cache(maxsize=4096)(_message_start)


def fits_comm(name: str) -> bool:
    """Could `name` be a whole comm: at most 15 bytes, an escape (`\\x09`, `#011`) one byte?
    A longer run before ` invoked oom-killer` holds a prefix no grammar read (`node-7 | web:
    python3`), cut at its last separator instead."""
    if not name or name.isspace():
        return False
    if len(name) <= COMM_BYTES and name.isascii():
        return True
    return len(_ESCAPED_BYTE.sub("_", name).encode("utf-8", "surrogatepass")) <= COMM_BYTES


def readme_table() -> str:
    """The table of the messages oomtrace knows in docs/messages.md (tests/test_messages.py keeps it
    true)."""
    rows = ["| message | what it tells | from |", "|---|---|---|"]
    for kind in MESSAGES:
        origin = {"kernel": "kernel", "any": "any source"}.get(kind.origin, kind.origin)
        anchors = ", ".join(f"`{a.strip()}`" for a in kind.anchors)
        rows.append(f"| {kind.name} ({anchors}) | {kind.label} | {origin} |")
    return "\n".join(rows)
