"""The watcher's files: `--record` (an append-only JSONL black box, fsync'd per event) and
`--cursor-file` (where to resume, replaced atomically). A file that cannot be written while the
watcher runs is said once and retried, never the end of the watcher."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from oomtrace import outputs, savedjson
from oomtrace.errors import InputError, OomtraceError
from oomtrace.sanitize import inert
from oomtrace.watch.notice import SCHEMA, Notice

# Events waiting for a --record that cannot be written (a full disk) are kept up to this many
# bytes, the oldest dropped beyond it (samples first): memory stays bounded however long it lasts.
PENDING_MAX_BYTES = 8 << 20
# A failing file is tried again at most this often.
RETRY_S = 1.0


class OnceSaid:
    """A file's failures as the watcher says them: the first once, the rest silently (it is
    retried), and the recovery once."""

    def __init__(self, what: str, say: Callable[[str], None], then: str = "retrying") -> None:
        self.what = what
        self._say = say
        self._then = then
        self.failing = False

    def failed(self, error: OSError | OomtraceError) -> None:
        if not self.failing:
            self.failing = True
            self._say(f"{self.what} is failing: {self._reason(error)}; {self._then} (said once)")

    def worked(self, note: str = "") -> None:
        if self.failing:
            self.failing = False
            self._say(f"{self.what} is written again{note}")

    def _reason(self, error: OSError | OomtraceError) -> str:
        if isinstance(error, OSError):
            return error.strerror or str(error)
        # outputs' message is `cannot write OPTION PATH: REASON`; the option and path are said
        # already (and the reason may hold a colon: a refused symlink's says where it is).
        return error.message.removeprefix(f"cannot write {self.what}: ")


class Record:
    """Every notice appended as one JSON line and fsync'd: a machine that wedges (journald syncs
    only every few minutes) still leaves the last minute on disk. Each line names its writer
    (`writer`: the watcher's pid), so that a file two watchers appended can be read once."""

    def __init__(self, path: str, say: Callable[[str], None]) -> None:
        self.path = path
        self.writer = os.getpid()
        self._fd = self._open()
        self._pending: deque[tuple[str, bytes]] = deque()
        self._pending_bytes = 0
        self.dropped = 0
        then = (
            f"the events still go to stdout and are kept (up to {PENDING_MAX_BYTES >> 20} MiB) "
            f"and retried every {RETRY_S:g} s"
        )
        self._failures = OnceSaid(f"--record {path}", say, then)
        self._tried = 0.0

    def _open(self) -> int:
        # The rules every output follows (a symlink followed, a device refused): outputs.py's.
        fd = outputs.open_append(self.path, "--record")
        # A watcher killed mid-write leaves a cut last line: start on a fresh one.
        try:
            if os.fstat(fd).st_size and not _ends_with_newline(self.path):
                os.write(fd, b"\n")
        except OSError:
            pass  # said with the first event that cannot be written
        return fd

    @property
    def behind(self) -> bool:
        """Events not yet on disk (the cursor must not pass them)."""
        return bool(self._pending) or self.dropped > 0

    def write(self, notice: Notice) -> None:
        document = {**notice.to_json(), "writer": self.writer}
        line = (json.dumps(document, ensure_ascii=False) + "\n").encode()
        self._pending.append((notice.event, line))
        self._pending_bytes += len(line)
        while self._pending_bytes > PENDING_MAX_BYTES and len(self._pending) > 1:
            self._drop_one()
        if not self._failures.failing or time.monotonic() - self._tried >= RETRY_S:
            self.flush()

    def retry(self) -> None:
        if self._pending and time.monotonic() - self._tried >= RETRY_S:
            self.flush()

    def flush(self) -> None:
        """Write what waits, line by line; a line the disk took only part of is taken back
        (the file keeps whole lines) and waits with the rest."""
        self._tried = time.monotonic()
        while self._pending:
            line = self._pending[0][1]
            try:
                write_whole(self._fd, line)
                os.fsync(self._fd)
            except OSError as error:
                self._failures.failed(error)
                return
            self._pending.popleft()
            self._pending_bytes -= len(line)
        self._failures.worked(f"; {self.dropped:,} event(s) dropped meanwhile" if self.dropped else "")
        self.dropped = 0

    def _drop_one(self) -> None:
        index = next((i for i, (event, _) in enumerate(self._pending) if event == "sample"), 0)
        _, line = self._pending[index]
        del self._pending[index]
        self._pending_bytes -= len(line)
        self.dropped += 1

    def reopen(self) -> None:
        """After logrotate moved the file (SIGHUP): append to the one at the path now."""
        fd = self._open()
        os.close(self._fd)
        self._fd = fd
        self.flush()

    def close(self) -> None:
        self.flush()
        os.close(self._fd)


def write_whole(fd: int, data: bytes) -> None:
    """`data` written to `fd` whole, or an OSError: on a regular file a write the disk took only
    part of is taken back out of it (the file keeps whole lines, never a cut one); a pipe or a
    terminal is written until all of it is in."""
    info = os.fstat(fd)
    regular = stat.S_ISREG(info.st_mode)
    done = 0
    try:
        while done < len(data):
            written = os.write(fd, data[done:])
            done += written
            if written == 0 or (regular and done < len(data)):
                raise OSError(errno.ENOSPC, "No space left on device (only part of a line was written)")
    except OSError:
        if regular and done:
            _take_back(fd, info.st_size)
        raise


def _take_back(fd: int, size: int) -> None:
    with contextlib.suppress(OSError):
        os.ftruncate(fd, size)
        if not _appending(fd):  # `>`, not `>>`: the next write goes where this one began
            os.lseek(fd, size, os.SEEK_SET)


def _appending(fd: int) -> bool:
    import fcntl

    return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND)


def _ends_with_newline(path: str) -> bool:
    with open(path, "rb") as existing:
        existing.seek(-1, os.SEEK_END)
        return existing.read(1) == b"\n"


def read_cursor(path: str, source: str) -> str | None:
    """The saved cursor, if the file is there and was written for this kind of source."""
    try:
        document = savedjson.load(path)
    except savedjson.NotOurs as error:
        raise InputError(
            f"cannot read --cursor-file {inert(path)}: {inert(str(error))}",
            hint="name a new file, or remove this one to start from now",
        ) from None
    if not isinstance(document, dict) or document.get("source") != source:
        return None
    cursor = document.get("cursor")
    return cursor if isinstance(cursor, str) else None


KillKey = tuple[str | None, int | None, str, str]
"""(boot, pid, victim, time): a kill as the watcher tells it from others (Watcher._key)."""


def read_told(path: str, source: str) -> tuple[list[KillKey], list[KillKey]]:
    """The kills the last run told (Watcher.told_keys) and those whose hook ran (Hook.ran),
    saved beside its cursor: a kill told again after a `kill -9` between its story and the
    cursor's save is then said as a repeat, and its hook runs again only if it had not run."""
    try:
        document = savedjson.load(path)
    except savedjson.NotOurs:
        return [], []
    if not isinstance(document, dict) or document.get("source") != source:
        return [], []
    return _keys(document.get("told")), _keys(document.get("hooked"))


def _keys(saved: Any) -> list[KillKey]:
    keys = []
    for key in saved if isinstance(saved, list) else ():
        if isinstance(key, list) and len(key) == 4:
            boot, pid, victim, time = key
            if (
                isinstance(boot, str | None)
                and (pid is None or (isinstance(pid, int) and not isinstance(pid, bool)))
                and isinstance(victim, str)
                and isinstance(time, str)
            ):
                keys.append((boot, pid, victim, time))
    return keys


def check_cursor_file(path: str) -> None:
    """At start, what each save will do (outputs' rules: a symlink followed where it may be, a
    temp file beside its target renamed over it), so that a cursor file that cannot be written is
    an error now, not at the first record."""
    outputs.check_writable(path, "--cursor-file")


def write_cursor(path: str, source: str, cursor: str, extra: dict[str, Any] | None = None) -> None:
    """Temp file, fsync, rename, fsync the folder: the cursor file is always whole. By the rules
    every output follows (outputs.py's): a symlink is followed where it may be, its target
    replaced and the link kept."""
    document = {"schema": SCHEMA, "source": source, "cursor": cursor, **(extra or {})}
    outputs.write_text(path, lambda out: json.dump(document, out), "--cursor-file", durable=True)


class CursorFile:
    """`--cursor-file`, saved as the watcher goes; a save that fails is said once and retried."""

    def __init__(self, path: str, source: str, say: Callable[[str], None]) -> None:
        self.path = path
        self.source = source
        self.saved: str | None = None
        self.told: tuple[list[Any], list[Any]] | None = None
        """The "told" and "hooked" lists of the last save that worked (loop._save writes them
        only when they changed)."""
        self._failures = OnceSaid(f"--cursor-file {path}", say)

    def save(self, cursor: str, extra: dict[str, Any] | None = None) -> None:
        try:
            write_cursor(self.path, self.source, cursor, extra)
        except (OSError, OomtraceError) as error:
            self._failures.failed(error)
            return
        self._failures.worked()
        self.saved = cursor
        self.told = ((extra or {}).get("told", []), (extra or {}).get("hooked", []))
