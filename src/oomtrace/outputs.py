"""Every file oomtrace writes is opened here: `-o`, `--prom-textfile`, `--cursor-file`, `--record`.

The rules, said in `--help` and docs/usage.md:
- a regular file (or a new one) is written beside its target and renamed over it when whole, so
  a full disk or an error part-way leaves the old file (or none), never half of one, and no
  temporary file either (nor does Ctrl-C, SIGTERM or SIGHUP); the new file keeps the old one's
  mode (and owner, for root);
- a symbolic link is followed (the file it points to is replaced, the link stays) where the
  kernel's protected_symlinks rule would follow it, on or off here: in a sticky world-writable
  folder (/tmp) only a link that is yours or the folder owner's; another is refused, named with its
  owner, so that no user can point root's `-o /tmp/report.md` at a file of root's;
- in such a folder a file or FIFO that is neither yours nor the folder owner's is refused too (the
  protected_regular and protected_fifos rules): another user may have put it there for you;
- elsewhere a file of another user's is replaced (as root, its owner kept), and that is said once
  on stderr;
- a character device or a FIFO (`/dev/null`, `/dev/stderr`, a named pipe) is written directly,
  never replaced by a file; a block device, a directory or a socket is refused;
- an output that is one of the inputs (or another output) is refused before anything is read;
  the journal files a read of a `-D` folder or of the system journal may open are inputs too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any

from oomtrace.errors import OutputError, UsageError
from oomtrace.sanitize import inert

HELP = (
    "A regular file is replaced atomically (a symlink's target, the link kept); a device or FIFO "
    "is written directly. In a sticky world-writable folder (/tmp), a symlink or file of another "
    "user's is refused."
)

# Names that are one of this process's open files (`-o /dev/stdout > saved.txt`): written
# through, as a shell redirection would be, never replaced by a new file.
_OPEN_FILE = re.compile(r"^/(?:dev/(?:fd/\d+|std(?:out|err))|proc/(?:self|\d+)/fd/\d+)$")
# The kernel's limit on the symbolic links one path may go through (ELOOP beyond it).
_MAX_LINKS = 40
# The files of other users said replaced, each once: the watcher rewrites --prom-textfile often.
_said_replaced: set[str] = set()


def write_text(
    path: str, write: Callable[[IO[str]], object], option: str = "-o", durable: bool = False
) -> None:
    """Hand `write` a text stream that ends up at `path` by the rules above. durable: fsync'd,
    the file and then its folder, before this returns (the watcher's cursor)."""
    direct, target, existing = _place(path, option)
    try:
        if direct:
            # Appending: nothing to a device or FIFO, and `-o /dev/stdout >> saved` keeps saved's
            # lines as `>>` asked (truncating would drop them).
            with open(target, "a", encoding="utf-8") as stream:
                write(stream)
            return
        if existing is not None and existing.st_uid != os.geteuid():
            _say_replaced(path, target, existing.st_uid, option)
        _replace(target, existing, lambda fd: _write_text_fd(fd, write, durable), durable)
    except BrokenPipeError:
        raise  # a FIFO's or /dev/stdout's reader left: quietly, as `| head` is
    except OSError as error:
        raise _failure(path, option, error) from None


def write_bytes(path: str, data: bytes, option: str, *, wait_for_reader: bool = True) -> None:
    """UTF-8 `data` (the Prometheus textfile) at `path` by the rules above. wait_for_reader=False:
    a FIFO is written only if a reader has it open and its pipe has room now (the watcher's
    metrics must never hold up a story); otherwise an OSError, which the caller retries."""
    if not wait_for_reader and is_fifo(path):
        try:
            _write_fifo_now(path, data)
        except OSError as error:
            raise _failure(path, option, error) from None
        return
    write_text(path, lambda stream: stream.write(data.decode("utf-8")), option)


def is_fifo(path: str) -> bool:
    """Is `path` (a symlink followed) a named pipe?"""
    return _kind(path) == "FIFO"


def _write_fifo_now(path: str, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "no reader has the FIFO open") from None
        raise
    try:
        done = 0
        while done < len(data):
            try:
                done += os.write(fd, data[done:])
            except BlockingIOError:
                raise OSError(errno.EAGAIN, "the FIFO's reader is not reading (its pipe is full)") from None
    finally:
        os.close(fd)


def check_writable(path: str, option: str) -> None:
    """What each write of `path` will do, tried at start without writing it: the rules above, and a
    temporary file made and removed beside the file a rename would replace. For a file written
    again and again (the watcher's cursor), so that one it cannot write is an error now."""
    import tempfile

    try:
        direct, target, _ = _place(path, option)
    except OutputError as error:
        if error.hint is None:  # a folder on the way missing or closed to us
            error.hint = f"each write makes it anew beside it, in {os.path.dirname(os.path.abspath(path))}"
        raise
    if direct:
        return
    folder = os.path.dirname(target)
    try:
        fd, temporary = tempfile.mkstemp(prefix=".oomtrace-", dir=folder)
    except OSError as error:
        raise OutputError(
            f"cannot write {option} {path}: {error.strerror or error}",
            hint=f"each write makes it anew beside it, in {folder}",
        ) from None
    os.close(fd)
    os.unlink(temporary)


def open_append(path: str, option: str) -> int:
    """A descriptor appending to `path` (created 0640 if absent; a symlink followed by the rules
    above): the watcher's record, which `why --record` reads back, so a device is refused."""
    target = _followed(path, option)
    kind = _kind(target)
    if kind in ("character device", "block device", "directory", "socket"):
        raise UsageError(
            f"{option} {path} is a {kind}",
            hint="the record is a file that `oomtrace why --record FILE` reads back",
        )
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
    if not _OPEN_FILE.match(os.path.abspath(path)):
        # A link made at the name since it was looked at is not followed (O_CREAT would follow it).
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(target, flags, 0o640)
    except OSError as error:
        raise _failure(path, option, error) from None
    try:
        # Asked of the file opened, not of the name: a file made there since is judged too.
        _refuse_planted(os.fstat(fd), target, path, option)
    except BaseException:
        os.close(fd)
        raise
    return fd


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
    target = _followed(path, option)
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        # New, or a symlink to a file not there yet: created where the link points.
        return False, target, None
    except OSError as error:
        raise _failure(path, option, error) from None
    mode = existing.st_mode
    if stat.S_ISCHR(mode):
        return True, target, existing
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        # A block device is a disk: a report written over it would destroy a file system.
        kind = _KINDS.get(stat.S_IFMT(mode), "special file")
        raise UsageError(f"cannot write {option} {path}: it is a {kind}")
    _refuse_planted(existing, target, path, option)
    if stat.S_ISFIFO(mode) or _OPEN_FILE.match(os.path.abspath(path)):
        return True, target, existing
    if not os.access(target, os.W_OK):
        # A rename would replace a file its owner made read-only; `>` would be refused too.
        raise OutputError(f"cannot write {option} {path}: {os.strerror(errno.EACCES)}")
    return False, target, existing


def _followed(path: str, option: str) -> str:
    """`path` with every symbolic link on the way followed, as open() follows them, each only
    where the kernel's protected_symlinks rule would (whether or not this machine turns it on):
    a link in a sticky world-writable folder is followed if it is the follower's or the folder
    owner's. A new file's path is returned as it will be; this process's own descriptors
    (/dev/stdout) as they are."""
    if _OPEN_FILE.match(os.path.abspath(path)):
        return path  # magic links, whose text is no path: the kernel opens the file they stand for
    resolved = "/" if path.startswith("/") else os.getcwd()
    parts = path.split("/")[::-1]  # a stack: the next part last
    links = 0
    while parts:
        part = parts.pop()
        if part in ("", "."):
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)  # `resolved` holds no link: `..` is its folder
            continue
        candidate = os.path.join(resolved, part)
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            if not any(p not in ("", ".") for p in parts):
                return candidate  # a new file
            raise _failure(path, option, FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))) from None
        except OSError as error:
            raise _failure(path, option, error) from None
        if not stat.S_ISLNK(info.st_mode):
            resolved = candidate
            continue
        links += 1
        if links > _MAX_LINKS:
            raise _failure(path, option, OSError(errno.ELOOP, os.strerror(errno.ELOOP)))
        if _planted(info.st_uid, resolved):
            raise OutputError(
                f"cannot write {option} {path}: the symlink {candidate} belongs to "
                f"{_user(info.st_uid)}, in the sticky world-writable folder {resolved}: not followed",
                hint="a link there is followed only if it is yours or the folder owner's, as the "
                "kernel's protected_symlinks rule says",
            )
        text = os.readlink(candidate)
        if text.startswith("/"):
            resolved = "/"
        parts.extend(text.split("/")[::-1])
    return resolved


def _planted(owner: int, folder: str) -> bool:
    """Could another user have put a name owned by `owner` in `folder` for us to write through?
    Yes where the folder is sticky and world-writable (/tmp) and the name is neither ours nor the
    folder owner's: the kernel's protected_symlinks, _regular and _fifos rules."""
    try:
        info = os.stat(folder)
    except OSError:
        return False
    public = stat.S_ISVTX | stat.S_IWOTH
    return info.st_mode & public == public and owner not in (os.geteuid(), info.st_uid)


def _refuse_planted(existing: os.stat_result, target: str, path: str, option: str) -> None:
    """A file or FIFO another user may have put in a sticky world-writable folder is not written."""
    kind = "FIFO" if stat.S_ISFIFO(existing.st_mode) else "file" if stat.S_ISREG(existing.st_mode) else None
    folder = os.path.dirname(target)
    if kind is None or not _planted(existing.st_uid, folder):
        return
    raise OutputError(
        f"cannot write {option} {path}: the {kind} {target} belongs to {_user(existing.st_uid)}, "
        f"in the sticky world-writable folder {folder}: not written",
        hint=f"a {kind} there is written only if it is yours or the folder owner's, as the "
        f"kernel's protected_{'fifos' if kind == 'FIFO' else 'regular'} rule says",
    )


def _say_replaced(path: str, target: str, owner: int, option: str) -> None:
    """Replacing another user's file is not done silently (root's `-o` over a file of theirs)."""
    if target in _said_replaced:
        return
    _said_replaced.add(target)
    kept = ", its owner and mode kept" if os.geteuid() == 0 else " by a file of yours, its mode kept"
    named = path if os.path.abspath(path) == target else f"{path} (the symlink's target {target})"
    print(f"oomtrace: {option} {inert(named)} is a file of {_user(owner)}: replaced{kept}", file=sys.stderr)


def _user(uid: int) -> str:
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _replace(
    target: str, existing: os.stat_result | None, write: Callable[[int], None], durable: bool = False
) -> None:
    """Written to a temporary file beside `target` and renamed over it when complete; the
    temporary file is removed however the write ends (an error, Ctrl-C, SIGTERM, SIGHUP)."""
    import tempfile  # only when a file is written: a report to stdout starts without it

    folder = os.path.dirname(target)
    with _signals_unwind():
        fd, temporary = tempfile.mkstemp(prefix=".oomtrace-", dir=folder)
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
    if durable:
        # The rename is on disk only once the folder is.
        folder_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(folder_fd)
        finally:
            os.close(folder_fd)


class _Signalled(BaseException):
    """SIGTERM or SIGHUP during a write: unwinds it (BaseException, so no `except Exception` on
    the way stops it), so that the temporary file goes before the signal ends the process."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number


def _raise_signalled(number: int, _frame: object) -> None:
    raise _Signalled(number)


@contextlib.contextmanager
def _signals_unwind() -> Iterator[None]:
    """SIGTERM and SIGHUP end a process on the spot by default, leaving its temporary file: while
    one exists they unwind the write instead, then end the process by the same signal, as before.
    A handler the program set (the watcher's, which only sets a flag) is left as it is."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (and only it receives signals)
        return
    previous = {}
    for number in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(number) == signal.SIG_DFL:
            previous[number] = signal.signal(number, _raise_signalled)
    try:
        yield
    except _Signalled as got:
        for number, handler in previous.items():
            signal.signal(number, handler)
        os.kill(os.getpid(), got.number)  # its default again: the process ends here
        raise
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _write_text_fd(fd: int, write: Callable[[IO[str]], object], durable: bool = False) -> None:
    with open(fd, "w", encoding="utf-8") as stream:
        write(stream)
        if durable:
            stream.flush()
            os.fsync(fd)


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
    if sys.stderr is None:
        # Python leaves sys.stderr None when 2 was closed at start (`2>&-`): the messages go to
        # the /dev/null now on 2, never into a report or a JSON stream (rich's Console writes to
        # standard output when handed None).
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.stdout = StandardOutput(sys.stdout)  # type: ignore[assignment]
