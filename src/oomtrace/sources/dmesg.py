"""This machine's kernel ring buffer, read through the real `dmesg`."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo

from oomtrace.errors import InputError
from oomtrace.prefixes import LineSplitter
from oomtrace.records import Record
from oomtrace.sources.base import Source


class RingBuffer(Source):
    """`dmesg` output with raw `[seconds]` stamps, made wall-clock by the boot time to the
    microsecond (CLOCK_REALTIME - CLOCK_BOOTTIME; /proc/stat's whole-second btime where those
    clocks cannot be read)."""

    kind = "dmesg"
    name = "dmesg"

    def __init__(self, zone: tzinfo, proc_stat: str = "/proc/stat") -> None:
        self.zone = zone
        self.proc_stat = proc_stat

    def boot_time(self) -> datetime | None:
        """When this machine booted, to the microsecond: the wall clock less the time since boot
        (CLOCK_REALTIME - CLOCK_BOOTTIME, read together). /proc/stat's btime is whole seconds: a
        kill was told up to a second early, before the server log's last line. Where the clocks
        cannot be read, btime. Either way a clock set since boot, and a suspend (the kernel's
        stamps do not count it), move it: the stamps are as good as the clock, not better."""
        try:
            since = time.clock_gettime(time.CLOCK_BOOTTIME)
            now = time.clock_gettime(time.CLOCK_REALTIME)
        except (AttributeError, OSError):
            return self._btime()
        return datetime.fromtimestamp(now - since, UTC).astimezone(self.zone)

    def _btime(self) -> datetime | None:
        try:
            with open(self.proc_stat, encoding="ascii") as stat:
                for line in stat:
                    if line.startswith("btime "):
                        return datetime.fromtimestamp(int(line.split()[1]), UTC).astimezone(self.zone)
        except (OSError, ValueError):
            return None
        return None

    def records(self) -> Iterator[Record]:
        binary = shutil.which("dmesg")
        if binary is None:
            raise InputError(
                "dmesg is not installed on this machine",
                hint="install util-linux, or pass a saved log with --kernel-log FILE",
            )
        # --notime would lose the stamps; the default "[seconds]" form is what we convert.
        result = subprocess.run([binary], capture_output=True, text=True, errors="replace", check=False)
        if result.returncode != 0:
            reason = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "failed"
            raise InputError(
                f"cannot read the kernel ring buffer: {reason}",
                hint="run as root (kernel.dmesg_restrict=1), or pass a saved log with --kernel-log FILE",
            )
        splitter = LineSplitter(self.name, zone=self.zone)
        for line_no, line in enumerate(result.stdout.splitlines(), start=1):
            yield from splitter.split(line, line_no)
