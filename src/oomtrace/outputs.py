"""Every file oomtrace writes is opened here: `-o`, `--prom-textfile`, `watch --record`.

The rules, said in `--help` and docs/usage.md:
- a regular file (or a new one) is written beside its target and renamed over it when whole, so
  a full disk or an error part-way leaves the old file (or none), never half of one; the new file
  keeps the old one's mode (and owner, for root);
- a symbolic link is followed: the file it points to is replaced, the link stays;
- a character device or a FIFO (`/dev/null`, `/dev/stderr`, a named pipe) is written directly,
  never replaced by a file; a block device, a directory or a socket is refused;
- an output that is one of the inputs (or another output) is refused before anything is read;
  the journal files a read of a `-D` folder or of the system journal may open are inputs too.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any

from oomtrace.errors import OutputError, UsageError

HELP = (
    "A regular file is replaced atomically (a symlink's target, the link kept); a device or FIFO "
    "is written directly."
)

# Names that are one of this process's open files (`-o /dev/stdout > saved.txt`): written
# through, as a shell redirection would be, never replaced by a new file.
_OPEN_FILE = re.compile(r"^/(?:dev/(?:fd/\d+|std(?:out|err))|proc/(?:self|\d+)/fd/\d+)$")


def write_text(path: str, write: Callable[[IO[str]], object], option: str = "-o") -> None:
    """Hand `write` a text stream that ends up at `path` by the rules above."""
    direct, target, existing = _place(path, option)
    try:
        if direct:
            # Appending: nothing to a device or FIFO, and `-o /dev/stdout >> saved` keeps saved's
            # lines as `>>` asked (truncating would drop them).
            with open(target, "a", encoding="utf-8") as stream:
                write(stream)
            return
        _replace(target, existing, lambda fd: _write_text_fd(fd, write))
    except BrokenPipeError:
        raise  # a FIFO's or /dev/stdout's reader left: quietly, as `| head` is
    except OSError as error:
        raise _failure(path, option, error) from None


def write_bytes(path: str, data: bytes, option: str) -> None:
    """UTF-8 `data` (the Prometheus textfile) at `path` by the rules above."""
    write_text(path, lambda stream: stream.write(data.decode("utf-8")), option)


def open_append(path: str, option: str) -> int:
    """A descriptor appending to `path` (a symlink followed, created 0640 if absent): the
    watcher's record, which `why --record` reads back, so a device is refused."""
    kind = _kind(path)
    if kind in ("character device", "block device", "directory", "socket"):
        raise UsageError(
            f"{option} {path} is a {kind}",
            hint="the record is a file that `oomtrace why --record FILE` reads back",
        )
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)
    except OSError as error:
        raise _failure(path, option, error) from None


def refuse_overlaps(
    outputs: Mapping[str, str | None],
    inputs: Mapping[str, Iterable[str]],
    within: Mapping[str, Iterable[str]] | None = None,
) -> None:
    """Refuse an output that is one of the inputs or another output (the same device and inode):
    `list -k x.log -o x.log` would replace the log with its own report. `inputs` are the files
    named by each option; `within` the files read inside a folder, by how the folder was named
    (`-D DIR`: its journal files), walked only when there is an output to check."""
    if not any(outputs.values()):
        return
    seen: dict[object, str] = {}
    for option, paths in inputs.items():
        for path in paths:
            read = _identity(path)
            if read is not None:
                seen.setdefault(read, f"{option} {path}")
    for folder, paths in (within or {}).items():
        for path in paths:
            read = _identity(path)
            if read is not None:
                seen.setdefault(read, f"{path}, a file of {folder}")
    for option, written in outputs.items():
        if written is None:
            continue
        # Two outputs not made yet are the same file when their names resolve to one path.
        identity: object = _identity(written) or os.path.realpath(written)
        if identity in seen:
            raise UsageError(
                f"{option} {written} is also {seen[identity]}: writing it would destroy it",
                hint="write the output to another file",
            )
        seen[identity] = f"{option} {written}"


def _identity(path: str) -> tuple[int, int] | None:
    """The file's (device, inode) where writing it could destroy it: regular files and FIFOs.
    A terminal or /dev/null may well be both read and written."""
    try:
        info = os.fstat(0) if path == "-" else os.stat(path)
    except (OSError, ValueError):
        return None
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
        return None
    return info.st_dev, info.st_ino


def _place(path: str, option: str) -> tuple[bool, str, os.stat_result | None]:
    """(write directly?, the path to write or replace, what is there now)."""
    if not path:
        raise UsageError(f"{option} needs a file name")
    try:
        existing = os.stat(path)  # follows a symlink
    except FileNotFoundError:
        # New, or a symlink to a file not there yet: created where the link points.
        return False, os.path.realpath(path), None
    except OSError as error:
        raise _failure(path, option, error) from None
    mode = existing.st_mode
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return True, path, existing
    if not stat.S_ISREG(mode):
        # A block device is a disk: a report written over it would destroy a file system.
        kind = _KINDS.get(stat.S_IFMT(mode), "special file")
        raise UsageError(f"cannot write {option} {path}: it is a {kind}")
    if _OPEN_FILE.match(os.path.abspath(path)):
        return True, path, existing
    if not os.access(path, os.W_OK):
        # A rename would replace a file its owner made read-only; `>` would be refused too.
        raise OutputError(f"cannot write {option} {path}: {os.strerror(errno.EACCES)}")
    return False, os.path.realpath(path), existing


def _replace(target: str, existing: os.stat_result | None, write: Callable[[int], None]) -> None:
    """Written to a temporary file beside `target` and renamed over it when complete."""
    import tempfile  # only when a file is written: a report to stdout starts without it

    fd, temporary = tempfile.mkstemp(prefix=".oomtrace-", dir=os.path.dirname(target))
    try:
        write(fd)
        if existing is not None:
            os.chmod(temporary, stat.S_IMODE(existing.st_mode))
            if os.geteuid() == 0:
                os.chown(temporary, existing.st_uid, existing.st_gid)
        else:
            os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, target)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


def _write_text_fd(fd: int, write: Callable[[IO[str]], object]) -> None:
    with open(fd, "w", encoding="utf-8") as stream:
        write(stream)


def _failure(path: str, option: str, error: OSError) -> OutputError:
    return OutputError(f"cannot write {option} {path}: {error.strerror or error}")


_KINDS = {
    stat.S_IFDIR: "directory",
    stat.S_IFBLK: "block device",
    stat.S_IFCHR: "character device",
    stat.S_IFSOCK: "socket",
    stat.S_IFIFO: "FIFO",
    stat.S_IFREG: "file",
}


def _kind(path: str) -> str | None:
    try:
        return _KINDS.get(stat.S_IFMT(os.stat(path).st_mode), "special file")
    except OSError:
        return None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class StandardOutput:
    """Standard output as the report sees it: a failed write (a full disk, `>&-`) is a one-line
    OutputError, not a traceback; EPIPE stays BrokenPipeError (the reader left: exit 141)."""

    def __init__(self, stream: IO[str] | None) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        written: int = self._guarded(lambda stream: stream.write(text))
        return written

    def flush(self) -> None:
        if self._stream is not None:
            self._guarded(lambda stream: stream.flush())

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def _guarded(self, act: Callable[[IO[str]], Any]) -> Any:
        if self._stream is None:
            raise OutputError("cannot write the report: standard output is closed", hint="use -o FILE")
        try:
            return act(self._stream)
        except BrokenPipeError:
            raise
        except OSError as error:
            if error.errno == errno.EPIPE:
                raise BrokenPipeError(*error.args) from None
            _discard_stdout()
            reason = error.strerror or error
            raise OutputError(f"cannot write the report to standard output: {reason}") from None

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def _discard_stdout() -> None:
    """What is still buffered can never be written: drop it, so Python's flush at exit does not
    print a second error."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def guard_standard_streams() -> None:
    """At start: a closed descriptor 0, 1 or 2 (`<&-`, `>&-`) gets /dev/null, so no file opened
    later lands on it (and a child's stdout never is our report), and standard output becomes a
    StandardOutput that says what went wrong. sys.stdin stays None: `-k -` says it is closed."""
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, flags)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
    sys.stdout = StandardOutput(sys.stdout)  # type: ignore[assignment]
