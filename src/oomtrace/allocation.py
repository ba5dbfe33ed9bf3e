"""What the failed allocation asked for (gfp_mask, order) and where in the kernel it came from."""

from __future__ import annotations

from functools import lru_cache

from oomtrace.model import Frame, Trigger
from oomtrace.units import kib

# The gfp bit layout of kernels 2.6.3x to 4.3, which printed the mask without its flags.
# (4.4 reshuffled the bits; from 4.8 on the kernel prints the flags itself.)
_OLD_BITS = (
    (0x01, "__GFP_DMA"),
    (0x02, "__GFP_HIGHMEM"),
    (0x04, "__GFP_DMA32"),
    (0x08, "__GFP_MOVABLE"),
    (0x10, "__GFP_WAIT"),
    (0x20, "__GFP_HIGH"),
    (0x40, "__GFP_IO"),
    (0x80, "__GFP_FS"),
    (0x100, "__GFP_COLD"),
    (0x200, "__GFP_NOWARN"),
    (0x400, "__GFP_REPEAT"),
    (0x800, "__GFP_NOFAIL"),
    (0x1000, "__GFP_NORETRY"),
    (0x2000, "__GFP_MEMALLOC"),
    (0x4000, "__GFP_COMP"),
    (0x8000, "__GFP_ZERO"),
    (0x10000, "__GFP_NOMEMALLOC"),
    (0x20000, "__GFP_HARDWALL"),
    (0x40000, "__GFP_THISNODE"),
    (0x80000, "__GFP_RECLAIMABLE"),
    (0x200000, "__GFP_NOTRACK"),
    (0x400000, "__GFP_NO_KSWAPD"),
    (0x800000, "__GFP_OTHER_NODE"),
    (0x1000000, "__GFP_WRITE"),
)
_OLD_COMPOSITES = (
    ("GFP_HIGHUSER_MOVABLE", 0x200DA),
    ("GFP_HIGHUSER", 0x200D2),
    ("GFP_USER", 0x200D0),
    ("GFP_TEMPORARY", 0x800D0),
    ("GFP_KERNEL", 0xD0),
    ("GFP_NOFS", 0x50),
    ("GFP_ATOMIC", 0x20),
    ("GFP_NOIO", 0x10),
)


def gfp_flags(trigger: Trigger, kernel: str | None) -> str | None:
    """The flags of the failed allocation: as printed, or decoded for kernels that did not print them."""
    if trigger.gfp_flags:
        return trigger.gfp_flags
    if kernel is None or trigger.gfp_mask is None or not _before_4_4(kernel):
        return None
    try:
        mask = int(trigger.gfp_mask, 16)
    except ValueError:
        return None
    names = []
    for name, value in _OLD_COMPOSITES:
        if mask & value == value:
            names.append(name)
            mask &= ~value
            break
    for bit, name in _OLD_BITS:
        if mask & bit:
            names.append(name)
            mask &= ~bit
    if mask:
        names.append(hex(mask))
    return "|".join(names) or None


def _before_4_4(release: str) -> bool:
    parts = release.split(".")
    try:
        return (int(parts[0]), int(parts[1].split("-")[0])) < (4, 4)
    except (ValueError, IndexError):
        return False


def request(trigger: Trigger | None, page_size_kb: int, kernel: str | None = None) -> str | None:
    """What the allocation that failed asked for: order N → size, with the GFP flags."""
    if trigger is None or trigger.order is None:
        # A userspace killer, or a header cut before `order=`: nothing known of the request.
        return None
    if trigger.order < 0:
        return "no allocation: the killer was invoked by hand (sysrq-f, order=-1)"
    size = kib(page_size_kb * (1 << trigger.order))
    flags = gfp_flags(trigger, kernel) or trigger.gfp_mask
    return (
        f"an order-{trigger.order} allocation ({size}, {flags})"
        if flags
        else f"an order-{trigger.order} allocation ({size})"
    )


# Frames of the OOM machinery itself: they say nothing about who was allocating.
_MACHINERY = (
    "show_stack",
    "dump_stack",
    "__dump_stack",
    "dump_header",
    "oom_kill_process",
    "out_of_memory",
    "__alloc_pages",
    "alloc_pages",
    "__alloc_pages_slowpath",
    "__alloc_pages_nodemask",
    "__alloc_pages_noprof",
    "alloc_pages_current",
    "alloc_pages_vma",
    "alloc_pages_mpol",
    "alloc_pages_mpol_noprof",
    "folio_alloc",
    "vma_alloc_folio",
    "mem_cgroup_out_of_memory",
    "try_charge",
    "try_charge_memcg",
    "charge_memcg",
    "__mem_cgroup_charge",
    "mem_cgroup_charge",
    "mem_cgroup_oom",
    "mem_cgroup_oom_synchronize",
    "cpuset_print_task_mems_allowed",
    "warn_alloc",
)
_PAGE_CACHE = (
    "filemap_fault",
    "page_cache_ra",
    "__page_cache_alloc",
    "add_to_page_cache",
    "filemap_get_pages",
)
_ANON_FAULT = (
    "do_anonymous_page",
    "do_huge_pmd_anonymous_page",
    "do_swap_page",
    "do_cow_fault",
    "wp_page_copy",
)
_FAULT = ("handle_mm_fault", "do_page_fault", "exc_page_fault", "do_user_addr_fault", "el0_da")
_KMALLOC = ("kmalloc", "__kmalloc", "kmem_cache_alloc", "kvmalloc", "vmalloc", "__vmalloc")
# (frame-name prefixes, what they mean): the first that matches a caller frame wins.
_KINDS = (
    (("sysrq_handle_moom",), "sysrq-f, by hand"),
    (("pagefault_out_of_memory",), "the end of a page fault that a memory cgroup could not charge"),
    (_PAGE_CACHE, "reading a file into the page cache"),
    (_ANON_FAULT, "a page fault on anonymous memory"),
    (_FAULT, "a page fault"),
    (("khugepaged", "collapse_huge_page"), "khugepaged collapsing huge pages"),
    (_KMALLOC, "a kernel allocation (kmalloc/vmalloc)"),
    (("copy_process", "dup_mm", "kernel_clone", "_do_fork"), "fork()"),
    (("pipe_write", "tcp_sendmsg", "sock_alloc_send_pskb"), "network or pipe buffers"),
)


# Cached: a crash loop's call traces name the same few functions thousands of times, and each
# was tested against every allocator name (a third of telling the stories of 5,000 kills).
@lru_cache(maxsize=4096)
def _is_machinery(function: str) -> bool:
    base = function.split(".")[0]
    return any(base == m or base.startswith(m + "_noprof") for m in _MACHINERY) or base.startswith(
        ("__alloc_pages", "alloc_pages", "dump_stack", "folio_alloc", "vma_alloc_folio")
    )


def call_path(frames: tuple[Frame, ...]) -> str | None:
    """Where the allocation came from, in words, with the first frames past the allocator."""
    reliable = [f for f in frames if f.reliable] or list(frames)
    callers = [f for f in reliable if not _is_machinery(f.function)]
    if not callers:
        return None
    drivers = [f for f in callers if f.module and f.module not in ("ext4", "xfs", "btrfs")]
    shown = " ← ".join(f.function.split(".")[0] + (f" [{f.module}]" if f.module else "") for f in callers[:3])
    if drivers:
        return f"the {drivers[0].module} driver: {shown}"
    names = [f.function.split(".")[0] for f in callers]
    for needles, words in _KINDS:
        if any(name.startswith(needle) for name in names for needle in needles):
            return f"{words}: {shown}"
    return shown
