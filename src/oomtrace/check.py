"""`oomtrace check`: a node-problem-detector custom plugin. Exit 0 no new OOM kill since the
cursor, 1 a new one (one summary line under 80 characters on stdout), 2 unknown (it could not
tell); the cursor remembers the kills already said, so each is reported once."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from datetime import datetime

from oomtrace import outputs, savedjson
from oomtrace.explain import container_of
from oomtrace.frozen import Frozen
from oomtrace.model import Analysis, Episode
from oomtrace.redact import Redactor
from oomtrace.services import cause_of
from oomtrace.watch.blackbox import write_cursor

# node-problem-detector's max_output_length in its examples: the status message is cut there.
MAX_LINE = 79
OK, NEW_KILL, UNKNOWN = 0, 1, 2
# How many kills the cursor remembers beyond those in the input it last read (rotated away, or
# from another input): enough for months of a crash loop, a few hundred KB of cursor at most.
REMEMBERED = 10_000


class Cursor(Frozen):
    said: tuple[str, ...]
    """The identities (`identity`) of the kills already said or already history, oldest first."""
    legacy_last: datetime | None = None
    """A cursor written before identities were kept holds only its newest kill's time: kills at
    or before it count as said, once, while the cursor is rewritten in the new form."""


def read(path: str) -> Cursor | None:
    """The saved cursor; None when there is none yet (the first run)."""
    try:
        document = savedjson.load(path)
        if document is None:
            return None
        if "said" in document:
            return Cursor(tuple(str(kill) for kill in document["said"]))
        last = document.get("last_kill")
        return Cursor((), datetime.fromisoformat(last) if last else None)
    except (ValueError, TypeError, AttributeError) as error:
        raise ValueError(f"cannot read --cursor-file {path}: {error}") from None


def kills_in(analysis: Analysis) -> list[Episode]:
    # A claim whose sender is not proven (`logger -t earlyoom`, a text log) is no alarm.
    return [e for e in analysis.episodes if e.is_kill and e.proven]


def new_kills(analysis: Analysis, cursor: Cursor | None) -> list[Episode]:
    """Kills the cursor has not said. With no cursor yet (the first run), none: the log's old
    kills are history, not news. A kill is judged by what it is, not by when it is stamped: a
    kill without a wall time (uptime-only dmesg) or stamped before the last one said (a clock
    set back, another host's clock) is news all the same."""
    if cursor is None:
        return []
    said = set(cursor.said)
    return [e for e in kills_in(analysis) if identity(e) not in said and not _legacy_said(e, cursor)]


def _legacy_said(episode: Episode, cursor: Cursor) -> bool:
    time = episode.moment.time
    return cursor.legacy_last is not None and time is not None and time <= cursor.legacy_last


def identity(episode: Episode) -> str:
    """What tells this kill from every other, read from any copy of its log: the host, the
    stamp as printed (wall clock, uptime or both, never re-computed from --tz or --boot-time),
    and the victim's pid, name and sizes. Not the file or the line number: kern.log rotated to
    kern.log.1 holds the same kills at other lines."""
    moment, victim = episode.moment, episode.victim
    parts = [episode.host, moment.raw, moment.uptime_s, episode.killer, episode.unit]
    if victim is not None:
        parts += [victim.pid, victim.comm, victim.total_vm_kb, victim.anon_rss_kb, victim.rss_kb]
    return hashlib.blake2b(repr(parts).encode(), digest_size=8).hexdigest()


def save(path: str, analysis: Analysis, cursor: Cursor | None) -> None:
    """The cursor only grows: every kill of this input, and those said before that this input
    lacks (a rotated log, a run over another file), so no run can make a later one repeat a kill.
    Written atomically: a run killed mid-write leaves the previous cursor whole."""
    current = list(dict.fromkeys(identity(e) for e in kills_in(analysis)))
    present = set(current)
    earlier = [kill for kill in (cursor.said if cursor else ()) if kill not in present]
    room = max(REMEMBERED - len(current), 0)
    said = (earlier[-room:] if room else []) + current
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_cursor(path, "check", "", {"said": said})


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """The cursor held by this run from its read to its save: two runs at once (cron beside a
    person, NPD's retry) would each read the same cursor and the later save drop the earlier's
    kill, which the next run then says again. A lock file beside it, since the cursor itself is
    replaced by a rename (a lock on its inode would not outlive the first save). Where the lock
    cannot be made, neither can the cursor be saved: the run goes on and its save says why."""
    import fcntl

    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def check_writable(path: str) -> None:
    """A cursor this run could not save is an error before its line is written: said after it,
    the kill would be said again by the next run. (A folder not there yet is made at the save.)"""
    if os.path.lexists(path) or os.path.isdir(os.path.dirname(os.path.abspath(path))):
        outputs.check_writable(path, "--cursor-file")


def summary(kills: list[Episode], redactor: Redactor | None = None) -> str:
    """`OOM kill: ds4-server (pid 4121) cgroup-oom pod 1a2b3c4d ctr 3f4e5d6c7b8a +2 more`; with
    a redactor (`--redact`) its placeholders instead (`pod id-1 ctr id-2 on host-1`)."""
    if not kills:
        return "no new OOM kill"
    hide = redactor.text if redactor is not None and redactor.enabled else None
    latest = kills[-1]
    victim = latest.victim
    name = f"{victim.comm} (pid {victim.pid})" if victim else str(latest.unit)
    pod, container = container_of(latest.task_memcg or latest.memcg)
    parts = [f"OOM kill: {name}", cause_of(latest)]
    if pod:
        # Cut, a pod's uid is no longer one to redact: its placeholder is taken whole.
        parts.append(f"pod {hide(pod) if hide else pod[:8]}")
    if container:
        parts.append(f"ctr {hide(container) if hide else container[:12]}")
    elif latest.unit:
        parts.append(latest.unit)
    if latest.host:
        parts.append(f"on {latest.host}")
    if hide is not None:
        parts = [hide(part) for part in parts]
    more = f" +{len(kills) - 1} more" if len(kills) > 1 else ""
    line = " ".join(parts)
    room = MAX_LINE - len(more)
    return (line if len(line) <= room else line[: room - 1] + "\u2026") + more
