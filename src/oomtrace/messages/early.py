"""Early warnings and crashes the kernel logs before or beside an OOM.

NVIDIA driver messages (Xid, no memory), page allocation failures, hung tasks, overcommit
refusals, and a process that crashed (not an OOM). Each kind beside its matcher.
"""

from __future__ import annotations

from oomtrace import events as ev
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages.kind import MessageKind
from oomtrace.records import Record

_NVRM_FUNCTION = lazy_compile(r"returned from (?P<fn>[\w]+)")
_NVRM_CONTEXT = lazy_compile(r"NVRM: (?P<fn>\w+): \*\*\*")
_XID = lazy_compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<code>\d{1,20})")


def _nvrm_xid(record: Record, text: str) -> ev.Event | None:
    xid = _XID.search(text)
    if not xid:
        return None
    return ev.EarlyWarning(record, "nvrm-xid", text[xid.start() :], f"xid-{xid['code']}")


NVRM_XID = MessageKind(
    "nvrm-xid",
    ("NVRM: Xid (",),
    _nvrm_xid,
    "NVIDIA Xid error",
    "NVRM: Xid (PCI:0000:01:00): 119, pid=1234, name=python3, Timeout after 6s of waiting for RPC "
    "response from GPU0 GSP!",
    begins=("NVRM:",),
    warning=True,
)


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


NVRM_NO_MEMORY = MessageKind(
    "nvrm-no-memory",
    ("NV_ERR_NO_MEMORY", "annot allocate", "NVRM: Out of memory", "NVRM: out of memory"),
    _nvrm_no_memory,
    "NVIDIA driver could not allocate memory",
    "NVRM: nvCheckFailedNoMemory: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) "
    "returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1359",
    begins=("NVRM:",),
    warning=True,
)


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


PAGE_ALLOCATION_FAILURE = MessageKind(
    "page-allocation-failure",
    ("page allocation failure", "vmalloc: allocation failure", "vmalloc error", "allocation failed"),
    _page_alloc,
    "kernel page allocation failure",
    "kworker/u8:2: page allocation failure: order:4, mode:0x40cc0(GFP_KERNEL|__GFP_COMP), "
    "nodemask=(null),cpuset=/,mems_allowed=0",
    after_name=": page allocation failure",
    name_is_comm=True,
    warning=True,
)


_HUNG = lazy_compile(
    r"INFO: task (?P<comm>.*):(?P<pid>\d{1,20}) blocked for more than (?P<s>\d{1,20}) seconds"
)


def _hung(record: Record, text: str) -> ev.Event | None:
    match = _HUNG.search(text)
    return ev.EarlyWarning(record, "hung-task", text, match["comm"]) if match else None


HUNG_TASK = MessageKind(
    "hung-task",
    ("blocked for more than",),
    _hung,
    "task blocked (hung task)",
    "INFO: task jbd2/sda1-8:312 blocked for more than 120 seconds.",
    begins=("INFO: task",),
    warning=True,
)


_VM_ENOUGH = lazy_compile(r"__vm_enough_memory: pid: (?P<pid>\d{1,20}), comm: (?P<comm>.*?), ")


def _vm_enough(record: Record, text: str) -> ev.Event | None:
    match = _VM_ENOUGH.search(text)
    return ev.EarlyWarning(record, "overcommit-refused", text, match["comm"]) if match else None


OVERCOMMIT_REFUSED = MessageKind(
    "overcommit-refused",
    ("__vm_enough_memory",),
    _vm_enough,
    "allocation refused by overcommit accounting",
    "__vm_enough_memory: pid: 4121, comm: python3, not enough memory for the allocation",
    begins=("__vm_enough_memory",),
    warning=True,
)


_CRASHED = lazy_compile(
    r"(?:traps: )?(?P<comm>[^\[\]]{1,64}?)\[(?P<pid>\d{1,20})\]:? (?:segfault at|general protection"
    r"|trap |unhandled (?:page fault|signal)|invalid opcode|divide error)"
)


def _crash(record: Record, text: str) -> ev.Event | None:
    match = _CRASHED.match(text)
    if not match:
        return None
    return ev.ProcessCrash(record, match["comm"], int(match["pid"]), text)


CRASH = MessageKind(
    "crash",
    ("segfault", "traps:"),
    _crash,
    "a process crashed (not an OOM)",
    "python3[4121]: segfault at 0 ip 00007f2b4c3d2a10 sp 00007ffd5a0b1c40 error 4 in libc.so.6",
)
