"""Which journal, and which of its entries: the query, its boots, and the rules both readers select by."""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterator
from datetime import datetime, tzinfo
from typing import Any

from oomtrace.errors import InputError, UsageError
from oomtrace.frozen import Frozen
from oomtrace.prefilter import Prefilter
from oomtrace.sources.journalfiles import journal_files_under

# Besides the kernel's records, these identifiers say why a process died.
IDENTIFIERS = ("systemd", "systemd-oomd", "earlyoom", "nohang", "lmkd", "systemd-journald")
SYSTEM_JOURNALS = ("/var/log/journal", "/run/log/journal")
PERMISSION_HINT = (
    "add yourself to the systemd-journal (or adm) group: sudo usermod -aG systemd-journal $USER, "
    "then log in again; or run with sudo"
)


class JournalQuery(Frozen):
    """Which journal, and which part of it."""

    directory: str | None = None
    files: tuple[str, ...] = ()
    host: str | None = None
    boot: str | None = None
    """"0" this boot, "-1" the one before, or a boot id."""
    since: datetime | None = None
    until: datetime | None = None

    @property
    def name(self) -> str:
        if self.files:
            return "journal " + ", ".join(self.files)
        if self.directory:
            return f"journal {self.directory}"
        return "system journal"


class Boot(Frozen):
    index: int
    """0 for the newest, -1 for the one before, as journalctl -b counts."""
    boot_id: str
    first: datetime | None
    last: datetime | None


def journal_folders(directory: str | None, files: tuple[str, ...]) -> dict[str, Iterator[str]]:
    """The folders a read of this journal opens files in, by how they were named (`-D DIR`, or
    the system journal when neither -D nor --journal-file is given), each with the files a reader
    may open there (walked only when asked for): inputs an output must not be."""
    if directory:
        return {f"-D {directory}": journal_files_under(directory)}
    if files:
        return {}
    return {"the system journal": (p for root in SYSTEM_JOURNALS for p in journal_files_under(root))}


def system_journal_present() -> bool:
    return any(glob.glob(os.path.join(root, "**", "*.journal"), recursive=True) for root in SYSTEM_JOURNALS)


def check_readable(query: JournalQuery) -> None:
    paths = list(query.files)
    if query.directory:
        try:
            # stat, not isdir: a folder behind one we may not enter must say "permission denied".
            is_dir = stat.S_ISDIR(os.stat(query.directory).st_mode)
        except PermissionError:
            raise InputError(
                f"cannot read {query.directory}: permission denied", hint=PERMISSION_HINT
            ) from None
        except OSError:
            raise InputError(f"cannot read {query.directory}: no such directory") from None
        if not is_dir:
            raise InputError(
                f"cannot read {query.directory}: not a directory",
                hint="pass the folder that holds *.journal files",
            )
        paths += glob.glob(os.path.join(query.directory, "**", "*.journal*"), recursive=True)
        if not paths:
            raise InputError(f"{query.directory} holds no *.journal files")
    elif not query.files:
        for root in SYSTEM_JOURNALS:
            paths += glob.glob(os.path.join(root, "**", "*.journal"), recursive=True)
    for path in query.files:
        if not os.path.exists(path):
            raise InputError(f"cannot read {path}: no such file")
    if paths and not any(os.access(p, os.R_OK) for p in paths):
        raise InputError(f"cannot read the {query.name}: permission denied", hint=PERMISSION_HINT)


def is_kernel(transport: str, identifier: str) -> bool:
    """A kernel entry; one whose _TRANSPORT object is damaged (so the field reads as absent) by
    the identifier the kernel's entries carry."""
    return transport == "kernel" or (not transport and identifier == "kernel")


def wall_time(realtime_us: int, zone: tzinfo) -> datetime:
    return datetime.fromtimestamp(realtime_us / 1_000_000, zone)


def wanted_entry(prefilter: Prefilter, number: int, transport: str, message: str) -> bool:
    """The first entry of a read (`number` counts within it), every userspace record (they are
    few), and kernel lines the prefilter keeps."""
    if transport != "kernel":
        return True
    wanted = prefilter.wants(message)
    return wanted or number == 1


def realtime_of(entry: dict[str, Any] | None) -> datetime | None:
    if not entry or not str(entry.get("__REALTIME_TIMESTAMP", "")).isdigit():
        return None
    return datetime.fromtimestamp(int(entry["__REALTIME_TIMESTAMP"]) / 1_000_000).astimezone()


def numbered_boots(found: list[tuple[str, datetime | None, datetime | None]]) -> list[Boot]:
    ordered = sorted(found, key=lambda b: b[1].timestamp() if b[1] else 0.0)
    count = len(ordered)
    return [Boot(i - count + 1, boot_id, first, last) for i, (boot_id, first, last) in enumerate(ordered)]


def resolve_boot(query: JournalQuery, boots: list[Boot]) -> str:
    wanted = (query.boot or "").replace("-", "") if not (query.boot or "").lstrip("-").isdigit() else None
    for boot in boots:
        if wanted is not None and boot.boot_id == wanted.lower():
            return boot.boot_id
        if wanted is None and query.boot is not None and boot.index == int(query.boot):
            return boot.boot_id
    known = ", ".join(f"{b.index} ({b.boot_id[:8]})" for b in boots) or "none"
    raise UsageError(
        f"no boot {query.boot!r} in the {query.name}", hint=f"boots there: {known}; see list --boots"
    )
