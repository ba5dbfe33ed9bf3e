"""`oomtrace check`: a node-problem-detector custom plugin. Exit 0 no new OOM kill since the
cursor, 1 a new one (one summary line under 80 characters on stdout), 2 unknown (it could not
tell); the cursor remembers the kills already said, so each is reported once."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime

from oomtrace.explain import container_of
from oomtrace.model import Analysis, Episode
from oomtrace.story import cause_of
from oomtrace.watch.blackbox import write_cursor

# node-problem-detector's max_output_length in its examples: the status message is cut there.
MAX_LINE = 79
OK, NEW_KILL, UNKNOWN = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Cursor:
    last: datetime | None
    """The time of the newest kill already said."""
    seen: frozenset[str]
    """The kills at that very second, already said (a second can hold several)."""


def read(path: str) -> Cursor | None:
    """The saved cursor; None when there is none yet (the first run)."""
    try:
        with open(path, encoding="utf-8") as saved:
            document = json.load(saved)
        last = document.get("last_kill")
        return Cursor(datetime.fromisoformat(last) if last else None, frozenset(document.get("seen", ())))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise ValueError(f"cannot read --cursor-file {path}: {error}") from None


def new_kills(analysis: Analysis, cursor: Cursor | None) -> list[Episode]:
    """Kills after the cursor. With no cursor yet (the first run), none: the log's old kills are
    history, not news; the cursor starts at the newest."""
    timed = [e for e in analysis.episodes if e.moment.time is not None and (e.victim or e.unit)]
    if cursor is None:
        return []
    return [e for e in timed if _after(e, cursor)]


def _after(episode: Episode, cursor: Cursor) -> bool:
    time = episode.moment.time
    assert time is not None
    if cursor.last is None or time > cursor.last:
        return True
    return time == cursor.last and key(episode) not in cursor.seen


def key(episode: Episode) -> str:
    victim = episode.victim
    return f"{episode.host or ''}/{victim.pid if victim else episode.unit}/{episode.moment.time}"


def save(path: str, analysis: Analysis, cursor: Cursor | None) -> None:
    timed = [e for e in analysis.episodes if e.moment.time is not None]
    last = max((e.moment.time for e in timed if e.moment.time), default=None)
    if cursor is not None and cursor.last is not None and (last is None or cursor.last > last):
        last = cursor.last  # the log rotated away what the cursor saw: keep the cursor
    seen = sorted(key(e) for e in timed if e.moment.time == last)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    write_cursor(path, "check", "", {"last_kill": last.isoformat() if last else None, "seen": seen})


def summary(kills: list[Episode]) -> str:
    """`OOM kill: ds4-server (pid 4121) cgroup-oom pod 1a2b3c4d ctr 3f4e5d6c7b8a +2 more`."""
    if not kills:
        return "no new OOM kill"
    latest = kills[-1]
    victim = latest.victim
    name = f"{victim.comm} (pid {victim.pid})" if victim else str(latest.unit)
    pod, container = container_of(latest.task_memcg or latest.memcg)
    parts = [f"OOM kill: {name}", cause_of(latest)]
    if pod:
        parts.append(f"pod {pod[:8]}")
    if container:
        parts.append(f"ctr {container[:12]}")
    elif latest.unit:
        parts.append(latest.unit)
    if latest.host:
        parts.append(f"on {latest.host}")
    more = f" +{len(kills) - 1} more" if len(kills) > 1 else ""
    line = " ".join(parts)
    room = MAX_LINE - len(more)
    return (line if len(line) <= room else line[: room - 1] + "\u2026") + more
