"""What the watcher samples itself: PSI memory pressure, MemAvailable and its slope, and the
memory events of the cgroups it was told to watch. No log holds these."""

from __future__ import annotations

import errno
import os
from collections import deque
from pathlib import Path

from oomtrace.frozen import Frozen

PRESSURE = "/proc/pressure/memory"
MEMINFO = "/proc/meminfo"
CGROUP_ROOT = Path("/sys/fs/cgroup")
# PSI triggers watch a window of this many microseconds: 2 s, the smallest that triggers opened
# without CAP_SYS_RESOURCE accept (Linux 6.4+ allows those only in multiples of 2 s).
TRIGGER_WINDOW_US = 2_000_000
# The MemAvailable slope is taken over this many seconds of samples.
SLOPE_WINDOW_S = 5.0


class Pressure(Frozen):
    some_avg10: float
    full_avg10: float


def read_pressure(path: str = PRESSURE) -> Pressure | None:
    """PSI memory (`some avg10=1.23 ...` / `full avg10=...`), or None where the kernel has no PSI."""
    try:
        with open(path, encoding="ascii") as pressure:
            text = pressure.read()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        fields = dict(part.split("=", 1) for part in rest.split() if "=" in part)
        try:
            values[kind] = float(fields["avg10"])
        except (KeyError, ValueError):
            continue
    if "some" not in values:
        return None
    return Pressure(values["some"], values.get("full", 0.0))


def trigger_spec(some_percent: float) -> str:
    """`some STALL WINDOW`: wake when tasks stalled on memory this share of a 2 s window."""
    return f"some {int(TRIGGER_WINDOW_US * some_percent / 100)} {TRIGGER_WINDOW_US}"


def open_trigger(trigger: str, path: str = PRESSURE) -> tuple[int | None, str]:
    """A PSI trigger's file descriptor to poll for POLLPRI, or None and why not (then sample)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    except OSError as error:
        return None, f"cannot open {path}: {error.strerror}"
    try:
        os.write(fd, trigger.encode() + b"\0")
    except OSError as error:
        os.close(fd)
        reason = "not permitted" if error.errno in (errno.EPERM, errno.EACCES) else error.strerror
        return None, f"a PSI trigger on {path} is {reason}"
    return fd, f"a PSI trigger on {path}"


def trigger_words(some_percent: float) -> str:
    """What the trigger of `trigger_spec` asks, as a reader of the start-up line needs it."""
    window = TRIGGER_WINDOW_US / 1_000_000
    return f"woken at once when tasks stall on memory {some_percent:g}% of any {window:g} s"


class Memory(Frozen):
    total_kb: int
    available_kb: int


def read_memory(path: str = MEMINFO) -> Memory | None:
    values: dict[str, int] = {}
    try:
        with open(path, encoding="ascii") as meminfo:
            for line in meminfo:
                name, _, rest = line.partition(":")
                if name in ("MemTotal", "MemAvailable"):
                    values[name] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if len(values) < 2:
        return None
    return Memory(values["MemTotal"], values["MemAvailable"])


class Slope:
    """MemAvailable over the last seconds: how fast it falls, and when it would reach zero.
    On unified-memory GPUs it has fallen 20 GiB in under two seconds, so the window is short."""

    def __init__(self, window_s: float = SLOPE_WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, now: float, available_kb: int) -> None:
        self._samples.append((now, available_kb))
        while self._samples and now - self._samples[0][0] > self.window_s:
            self._samples.popleft()

    def kb_per_s(self) -> float | None:
        if len(self._samples) < 2:
            return None
        (t0, a0), (t1, a1) = self._samples[0], self._samples[-1]
        return (a1 - a0) / (t1 - t0) if t1 > t0 else None

    def zero_in_s(self) -> float | None:
        """Seconds until MemAvailable reaches zero at the current slope; None unless falling."""
        rate = self.kb_per_s()
        if rate is None or rate >= 0 or not self._samples:
            return None
        return self._samples[-1][1] / -rate


class CgroupCounters(Frozen):
    """Cumulative memory events of one cgroup: v2 `memory.events`, or v1's failcnt and oom_kill."""

    path: str
    counts: dict[str, int]
    pressure: Pressure | None = None
    """Its own PSI (`memory.pressure`, cgroup v2 only)."""


def find_cgroup(name: str, root: Path = CGROUP_ROOT) -> Path | None:
    """A cgroup directory from a path or a systemd unit name (`llama.service`), v2 or v1."""
    given = Path(name)
    if given.is_absolute() and given.is_dir():
        return given
    for base in (root, root / "memory", root / "unified"):
        for slice_name in ("", "system.slice", "user.slice"):
            candidate = base / slice_name / name
            if (candidate / "memory.events").exists() or (candidate / "memory.oom_control").exists():
                return candidate
    return None


def read_cgroup(path: Path) -> CgroupCounters | None:
    events = path / "memory.events"
    counts: dict[str, int] = {}
    try:
        if events.exists():
            for line in events.read_text().splitlines():
                name, _, value = line.partition(" ")
                counts[name] = int(value)
        else:
            for line in (path / "memory.oom_control").read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    counts["oom_kill"] = int(value)
                elif name == "under_oom":
                    counts["under_oom"] = int(value)
            # With a memory+swap limit the charge fails there first: either counter is a hit.
            counts["max"] = sum(
                int((path / name).read_text())
                for name in ("memory.failcnt", "memory.memsw.failcnt")
                if (path / name).exists()
            )
    except (OSError, ValueError):
        return None
    return CgroupCounters(str(path), counts, read_pressure(str(path / "memory.pressure")))


# What each memory event means, for the warning a rise of it gives.
CGROUP_EVENTS = {
    "high": "it went over memory.high and is being throttled and reclaimed",
    "max": "it hit its memory limit (allocations failed and forced reclaim)",
    "oom": "it ran out of memory at its limit: the OOM killer runs next",
    "oom_kill": "the kernel killed a process in it",
}
