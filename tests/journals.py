"""Real journal files for the tests, written by systemd-journal-remote from export-format text."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

REMOTE = next(
    (
        p
        for p in ("/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote")
        if Path(p).exists()
    ),
    shutil.which("systemd-journal-remote"),
)


@dataclass
class Entry:
    """One journal entry: a kernel line or a service's record."""

    time: datetime
    host: str
    boot: str
    message: str
    identifier: str = "kernel"
    unit: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def export(self, boot_start: datetime) -> str:
        realtime = int(self.time.timestamp() * 1_000_000)
        monotonic = int((self.time - boot_start).total_seconds() * 1_000_000)
        fields = {
            "__REALTIME_TIMESTAMP": str(realtime),
            "__MONOTONIC_TIMESTAMP": str(monotonic),
            "_BOOT_ID": self.boot,
            "_HOSTNAME": self.host,
            "SYSLOG_IDENTIFIER": self.identifier,
            "_TRANSPORT": "kernel" if self.identifier == "kernel" else "journal",
            "MESSAGE": self.message,
        }
        if self.identifier == "kernel":
            fields["_SOURCE_MONOTONIC_TIMESTAMP"] = str(monotonic)
        if self.unit:
            fields["_SYSTEMD_UNIT"] = self.unit
        fields.update(self.extra)
        return "".join(f"{key}={value}\n" for key, value in fields.items())


def write_journal(path: Path, entries: list[Entry], boot_starts: dict[str, datetime]) -> Path:
    """Feed the entries, oldest first, to systemd-journal-remote; returns the journal file."""
    assert REMOTE is not None
    text = "\n".join(e.export(boot_starts[e.boot]) for e in sorted(entries, key=lambda e: e.time)) + "\n"
    subprocess.run([REMOTE, f"--output={path}", "-"], input=text.encode(), check=True, capture_output=True)
    return path


def kernel_entries(log: Path, host: str, boot: str, year: int = 2026) -> list[Entry]:
    """The kernel lines of a journalctl short-format fixture, as journal entries."""
    from dateutil import tz

    from oomtrace.prefixes import LineSplitter

    splitter = LineSplitter(str(log), zone=tz.UTC, year=year)
    entries = []
    for number, line in enumerate(log.read_text().splitlines(), start=1):
        for record in splitter.split(line, number):
            if record.stamp.wall is None or not record.message.strip():
                continue
            entries.append(Entry(record.stamp.wall, host, boot, record.message))
    return entries
