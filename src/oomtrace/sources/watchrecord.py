"""A `watch --record` file read back: the log lines behind each warning and kill it kept.

One JSON object a line, as the watcher wrote them:

    {"schema": "oomtrace/1", "event": "warning", "kind": "psi-some", "time": "...",
     "text": "memory pressure some avg10 23.5% (warn at 10.0%)",
     "lines": [{"time": "...", "uptime_s": null, "ident": "oomtrace-watch", "host": null,
                "message": "warning psi-some: memory pressure some avg10 23.5% (warn at 10.0%)"}]}

Each entry of `lines` becomes a record, so the watcher's own warnings (PSI, MemAvailable, which
no log holds) join the story, and a kill whose report the journal never wrote to disk (a machine
that wedged) is read from here. A kill in both is one episode (episodes: kills read twice).

Two watchers appending one file (a second instance, a unit started twice) write each event
twice; each line names its writer (`"writer": PID`), and an event already read is skipped: a
kill by its (boot, pid, victim, time), any other by its kind and log lines. The file's problem
says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import tzinfo
from typing import Any

from oomtrace.errors import InputError
from oomtrace.jsonshapes import load_object, to_time
from oomtrace.records import Record, Stamp
from oomtrace.sanitize import inert
from oomtrace.sources.base import Source
from oomtrace.sources.textfile import BoundedLines


class WatchRecordFile(Source):
    kind = "watch-record"

    def __init__(self, path: str, zone: tzinfo) -> None:
        self.path = path
        self.name = path
        self.zone = zone

    def records(self) -> Iterator[Record]:
        try:
            stream = open(self.path, "rb")  # noqa: SIM115 (closed below, after the generator ends)
        except OSError as error:
            raise InputError(f"cannot read --record {inert(self.path)}: {error.strerror}") from None
        unreadable = 0
        writers = _Writers()
        with stream:
            for number, line in enumerate(BoundedLines(stream, self.path, "watch record").byte_lines(), 1):
                notice = load_object(line)
                if notice is None:
                    unreadable += line.strip() != b""
                    continue
                writers.saw(notice.get("writer"), number)
                lines = notice.get("lines")
                if not isinstance(lines, list) or not lines or not writers.first_time(notice):
                    continue
                for entry in lines:
                    record = self._record(entry, number)
                    if record is not None:
                        yield record
        if unreadable:
            self.add_problem(
                f"{unreadable:,} line(s) not JSON (the last is cut when the watcher was killed mid-write)"
            )
        self.add_problem(writers.problem())

    def _record(self, entry: Any, number: int) -> Record | None:
        if not isinstance(entry, dict) or not isinstance(entry.get("message"), str):
            return None
        when = entry.get("time")
        # The watcher writes ISO times with their offset; one without is this zone's.
        wall = to_time(when, self.zone) if isinstance(when, str) else None
        wall = wall.astimezone(self.zone) if wall else None
        uptime = entry.get("uptime_s")
        ident = entry.get("ident")
        host = entry.get("host")
        stamp = Stamp(
            wall,
            float(uptime) if isinstance(uptime, (int, float)) else None,
            wall.isoformat() if wall else "",
        )
        message = entry["message"]
        return Record(
            self.name,
            number,
            message,
            message,
            stamp,
            ident if isinstance(ident, str) else "kernel",
            host if isinstance(host, str) else None,
        )


class _Writers:
    """Which watchers wrote the file and when, and the events already read."""

    def __init__(self) -> None:
        self._spans: dict[int, list[int]] = {}
        self._seen: set[tuple[Any, ...]] = set()
        self.kills_twice = 0
        self.others_twice = 0

    def saw(self, writer: Any, number: int) -> None:
        if isinstance(writer, int):
            self._spans.setdefault(writer, [number, number])[1] = number

    def first_time(self, notice: dict[str, Any]) -> bool:
        key = _event_key(notice)
        if key not in self._seen:
            self._seen.add(key)
            return True
        if key[0] == "kill":
            self.kills_twice += 1
        else:
            self.others_twice += 1
        return False

    def _at_once(self) -> list[int]:
        """Writers whose spans of lines overlap: they appended at the same time."""
        together: set[int] = set()
        latest: tuple[int, int] | None = None  # (last line, writer) of the spans so far
        for writer, (start, end) in sorted(self._spans.items(), key=lambda item: item[1][0]):
            if latest is not None and start < latest[0]:
                together |= {writer, latest[1]}
            if latest is None or end > latest[0]:
                latest = (end, writer)
        return sorted(together)

    def problem(self) -> str | None:
        at_once = self._at_once()
        twice = []
        if self.kills_twice:
            twice.append(f"{self.kills_twice:,} kill(s)")
        if self.others_twice:
            twice.append(f"{self.others_twice:,} other event(s)")
        read_once = f"{' and '.join(twice)} written twice were read once" if twice else ""
        if len(at_once) > 1:
            pids = ", ".join(str(pid) for pid in at_once)
            head = f"{len(at_once)} watchers appended this file at once (pids {pids})"
            return f"{head}: {read_once}" if read_once else head
        return read_once or None


def _event_key(notice: dict[str, Any]) -> tuple[str, ...]:
    """A kill by (boot, pid, victim, time), as the watcher tells each once; any other event by
    its kind and the log lines behind it."""
    story = notice.get("story")
    episode = story.get("episode") if isinstance(story, dict) else None
    if notice.get("event") == "kill" and isinstance(episode, dict):
        victim = episode.get("victim")
        victim = victim if isinstance(victim, dict) else {}
        fields = (notice.get("boot"), victim.get("pid"), victim.get("comm"), episode.get("time"))
        return ("kill", *(str(field) for field in fields))
    entries = [entry for entry in notice.get("lines") or [] if isinstance(entry, dict)]
    lines = (f"{entry.get('time')}\t{entry.get('message')}" for entry in entries)
    return (str(notice.get("event")), str(notice.get("kind")), *lines)
