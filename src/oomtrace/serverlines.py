"""The grammar of model servers' own logs: stamps, how a log ended, and what it planned to spend."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, tzinfo

from oomtrace.frozen import Frozen
from oomtrace.lazyregex import lazy_compile
from oomtrace.prefixes import month_number
from oomtrace.zones import parse_date

# Each pattern cuts a stamp off the start of a line; dateutil (or the month table) reads it.
_ISO = lazy_compile(
    r"\[?(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)\]?\s"
)
_VLLM = lazy_compile(r"(?:[A-Z]+\s+)?(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d+)?\s")
_GLOG = lazy_compile(r"[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?\s")
_SYSLOG = lazy_compile(r"(\S+)\s+(\d{1,2}) (\d{2}):(\d{2}):(\d{2})\s")
_LLAMA_RELATIVE = lazy_compile(r"\d+\.\d{2}\.\d{3}\.\d{3} [A-Z] ")


class LineStamp(Frozen):
    time: datetime | None
    relative: bool
    """llama.cpp's --log-timestamps: minutes.seconds.ms.us since start, no wall time."""


def stamp_of(line: str, zone: tzinfo, year: int) -> LineStamp:
    """The time a server-log line was written, when its prefix says."""
    match = _ISO.match(line)
    if match:
        text = match.group(1).replace(",", ".")
        from dateutil.parser import ParserError  # here: a kernel log alone never needs it

        try:
            moment = parse_date(text)
        except (ParserError, ValueError, ArithmeticError):  # dateutil: OverflowError, decimal errors
            return LineStamp(None, False)
        return LineStamp(moment if moment.tzinfo else moment.replace(tzinfo=zone), False)
    for pattern in (_VLLM, _GLOG):
        match = pattern.match(line)
        if match:
            month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 6))
            return LineStamp(_safe(year, month, day, hour, minute, second, zone), False)
    match = _SYSLOG.match(line)
    if match and month_number(match.group(1)):
        day, hour, minute, second = (int(match.group(i)) for i in range(2, 6))
        return LineStamp(
            _safe(year, month_number(match.group(1)) or 1, day, hour, minute, second, zone), False
        )
    if _LLAMA_RELATIVE.match(line):
        return LineStamp(None, True)
    return LineStamp(None, False)


def without_stamp(line: str) -> str:
    """The line after its time stamp, for showing beside a time of our own."""
    for pattern in (_ISO, _VLLM, _GLOG, _SYSLOG):
        match = pattern.match(line)
        if match:
            return line[match.end() :]
    return line


def _safe(
    year: int, month: int, day: int, hour: int, minute: int, second: int, zone: tzinfo
) -> datetime | None:
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=zone)
    except ValueError:
        return None


# How a log ended, by its last lines. Checked in this order: the first kind found wins.
_SHELL_KILLED = lazy_compile(r"^(?:\[\d+\]\+?\s+)?(?:\d+\s+)?Killed\b|^<killed>$|: line \d+: +\d+ Killed")
_OOM_ERROR = lazy_compile(
    r"CUDA out of memory|OutOfMemoryError|cudaMalloc failed|cudaErrorMemoryAllocation"
    r"|CUDA error: out of memory|hipErrorOutOfMemory|HIP out of memory|std::bad_alloc|\bMemoryError\b"
    r"|failed to allocate .*buffer"
    r"|ggml_gallocr\w*: failed to allocate|unable to allocate .*(?:CUDA|backend) buffer|out of memory",
    re.IGNORECASE,
)
# A program's own words for running out of memory, never a kernel's: what marks a server's log
# given as a kernel log (`-k`) instead of `--server-log`.
_PROGRAM_OOM = lazy_compile(
    r"CUDA out of memory|CUDA error: out of memory|cudaErrorMemoryAllocation|HIP out of memory"
    r"|hipErrorOutOfMemory|(?:java\.lang\.|torch\.|\b)OutOfMemoryError\b(?:: [\w ]{1,40})?|std::bad_alloc"
)


def program_oom_error(line: str) -> str | None:
    """The words of a program's own out-of-memory error in `line`, if it holds one."""
    found = _PROGRAM_OOM.search(line)
    return found.group(0) if found else None


_CRASH = lazy_compile(
    r"Segmentation fault|segfault|SIGSEGV|SIGABRT|SIGBUS|Aborted|core dumped"
    r"|Traceback \(most recent call last\)|terminate called after throwing|GGML_ASSERT|^panic:"
    r"|fatal error|Illegal instruction|Bus error",
)
_CLEAN = lazy_compile(
    r"shutting down|shutdown complete|Application shutdown complete|Finished server process|exiting\.?$"
    r"|received SIGTERM|cleaning up before exit|Stopped|graceful",
    re.IGNORECASE,
)
ENDINGS = ("killed", "out-of-memory-error", "crash", "clean")
# A server's own warnings that memory is short: an out-of-memory error it went on after, free
# memory under its reserve, an allocation refused or made smaller. Early warnings, as the
# kernel's NVRM lines are.
_MEMORY_WARNING = lazy_compile(
    _OOM_ERROR.pattern
    + r"|MemAvailable\b.*\b(?:below|under|less than|low)\b|\blow (?:on )?memory\b|memory budget leaves"
    r"|\w*[Aa]lloc\w*\b.{0,40}\bfailed\b"
    r"|\b(?:reduc|shrink|shrunk|lower)\w*\b.{0,40}\b(?:KV cache|batch size|context|max_num_seqs|gpu_memory)",
    re.IGNORECASE,
)


def warns_of_memory(line: str) -> bool:
    """Does this server-log line say memory is running short?"""
    return bool(_MEMORY_WARNING.search(line))


_TAIL = 30


def ending_of(last_lines: list[str]) -> tuple[str, str | None]:
    """("silent" | "killed" | "out-of-memory-error" | "crash" | "clean", the line that says so)."""
    tail = [line.rstrip() for line in last_lines[-_TAIL:] if line.strip()]
    if tail and _SHELL_KILLED.search(tail[-1].strip()):
        return "killed", tail[-1]
    for kind, pattern in (("out-of-memory-error", _OOM_ERROR), ("crash", _CRASH), ("clean", _CLEAN)):
        for line in reversed(tail):
            if pattern.search(line):
                return kind, line
    return "silent", None


class PlanItem(Frozen):
    """One thing the server said it would hold (a buffer, the weights, a cache)."""

    label: str
    gib: float
    counted: bool
    """Part of the total: buffers and caches it allocates, not mappings or reserves it leaves free."""
    line: str


_MIB = 1 / 1024
_Reader = Callable[["re.Match[str]"], tuple[str, float, bool]]


def _buffer(m: re.Match[str]) -> tuple[str, float, bool]:
    # CPU_Mapped model buffers are the mmap of the file, page cache rather than an allocation.
    return f"{m[1]} {m[2]} buffer", float(m[3]) * _MIB, not m[1].endswith("_Mapped")


def _gib(label: str, counted: bool = True) -> _Reader:
    return lambda m: (label, float(m[1]), counted)


def _streams(m: re.Match[str]) -> tuple[str, float, bool]:
    return f"{m[1]} stream windows", int(m[1]) * float(m[2]), True


# (pattern, reader): what a line says the server will hold.
_PLAN: tuple[tuple[re.Pattern[str], _Reader], ...] = (
    # llama.cpp: "load_tensors: CUDA0 model buffer size = 87123.45 MiB", "... KV buffer size",
    # "llama_context: CUDA0 compute buffer size = ..."
    (lazy_compile(r"(\S+) (model|KV|compute|output|RS) buffer size\s*=\s*([\d.]+) MiB"), _buffer),
    # vLLM
    (lazy_compile(r"[Mm]odel (?:loading|weights) took ([\d.]+) ?GiB"), _gib("model weights")),
    (lazy_compile(r"Available KV cache memory: ([\d.]+) ?GiB"), _gib("KV cache")),
    # ds4 (seed 002)
    (lazy_compile(r"built \d+ aligned CUDA artifacts \(([\d.]+) GiB\)"), _gib("aligned CUDA artifacts")),
    (
        lazy_compile(r"CUDA prepared model tensor mappings ([\d.]+) GiB"),
        _gib("device cache (tensor mappings)"),
    ),
    (lazy_compile(r"leaving the ([\d.]+) GiB model mmap unpinned"), _gib("model mmap (unpinned)", False)),
    # TensorFold (seed 004): "model 75.92 GiB; 4 streams at once, 4.78 GiB each ... a 6.7 GiB prompt cache"
    (lazy_compile(r"\bmodel ([\d.]+) GiB;"), _gib("model weights")),
    (lazy_compile(r"(\d+) streams at once, ([\d.]+) GiB each"), _streams),
    (lazy_compile(r"a ([\d.]+) GiB prompt cache"), _gib("prompt cache")),
    (lazy_compile(r"after a ([\d.]+) GiB reserve"), _gib("reserve kept free", False)),
)


def plan_items(line: str) -> list[PlanItem]:
    """What one line says the server will spend."""
    items = []
    for pattern, read in _PLAN:
        for match in pattern.finditer(line):
            label, gib, counted = read(match)
            items.append(PlanItem(label, round(gib, 2), counted, line.strip()))
    return items
