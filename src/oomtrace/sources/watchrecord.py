"""A `watch --record` file read back: the log lines behind each warning and kill it kept.

One JSON object a line, as the watcher wrote them:

    {"schema": "oomtrace/1", "event": "warning", "kind": "psi-some", "time": "...",
     "text": "memory pressure some avg10 23.5% (warn at 10.0%)",
     "lines": [{"time": "...", "uptime_s": null, "ident": "oomtrace-watch", "host": null,
                "message": "warning psi-some: memory pressure some avg10 23.5% (warn at 10.0%)"}]}

Each entry of `lines` becomes a record, so the watcher's own warnings (PSI, MemAvailable, which
no log holds) join the story, and a kill whose report the journal never wrote to disk (a machine
that wedged) is read from here. A kill in both is one episode (episodes: kills read twice).

The `sample` events (MemAvailable and PSI, once a second while a warning is active) are kept
for the pictures: those of the half hour before each kill in the file and before its end (a kill
read from the journal alone), so that memory stays bounded however long the file.

Two watchers appending one file (a second instance, a unit started twice) write each event
twice; each line names its writer (`"writer": PID`), and an event already read is skipped: a
kill by its (boot, pid, victim, time), any other by its kind and log lines. The file's problem
says so.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from datetime import datetime, timedelta, tzinfo
from typing import Any, TypeGuard

from oomtrace.errors import InputError
from oomtrace.jsonshapes import load_object, to_time
from oomtrace.model import SAMPLES_BEFORE_S, ProbeSample
from oomtrace.records import Record, Stamp
from oomtrace.sanitize import inert
from oomtrace.sources.base import Source
from oomtrace.sources.lines import BoundedLines


class WatchRecordFile(Source):
    kind = "watch-record"

    def __init__(self, path: str, zone: tzinfo) -> None:
        self.path = path
        self.name = path
        self.zone = zone
        self.samples: tuple[ProbeSample, ...] = ()
        """The samples near the kills, once `records()` is done."""

    def records(self) -> Iterator[Record]:
        try:
            stream = open(self.path, "rb")  # noqa: SIM115 (closed below, after the generator ends)
        except OSError as error:
            raise InputError(f"cannot read --record {inert(self.path)}: {error.strerror}") from None
        unreadable = 0
        writers = _Writers()
        samples = _Samples()
        with stream:
            for number, line in enumerate(BoundedLines(stream, self.path, "watch record").byte_lines(), 1):
                notice = load_object(line)
                if notice is None:
                    unreadable += line.strip() != b""
                    continue
                writers.saw(notice.get("writer"), number)
                event = notice.get("event")
                if event == "sample":
                    samples.add(notice, self.zone)
                    continue
                if event == "kill":
                    samples.kill()
                lines = notice.get("lines")
                if not isinstance(lines, list) or not lines or not writers.first_time(notice):
                    continue
                for entry in lines:
                    record = self._record(entry, number)
                    if record is not None:
                        samples.host(record.host)
                        yield record
        self.samples = samples.kept()
        if unreadable:
            self.add_problem(
                f"{unreadable:,} line(s) not JSON (the last is cut when the watcher was killed mid-write)"
            )
        self.add_problem(writers.problem())
        self.add_problem(samples.problem())

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


# More than any machine's memory (an exbibyte, in KiB): a figure past it is damage, not a sample.
_MOST_KB = 1 << 50


class _Samples:
    """The file's samples of the half hour before each kill it holds, and before its end."""

    # One a second for SAMPLES_BEFORE_S, twice over for two watchers appending one file.
    _WINDOW = 2 * int(SAMPLES_BEFORE_S)
    # The kills of a crash loop each keep their half hour; past this many, the latest are kept.
    _MOST = 40 * int(SAMPLES_BEFORE_S)

    def __init__(self) -> None:
        self._window: deque[tuple[datetime, int, float | None, float | None]] = deque(maxlen=self._WINDOW)
        self._kept: deque[tuple[datetime, int, float | None, float | None]] = deque(maxlen=self._MOST)
        self._hosts: set[str] = set()
        self.unreadable = 0
        self.dropped = 0

    def add(self, notice: dict[str, Any], zone: tzinfo) -> None:
        when = notice.get("time")
        wall = to_time(when, zone) if isinstance(when, str) else None
        available = notice.get("memavailable_kb")
        if wall is None or not _figure(available):
            self.unreadable += 1
            return
        window = self._window
        while window and window[0][0] < wall - timedelta(seconds=SAMPLES_BEFORE_S):
            window.popleft()
        some, full = _percent(notice.get("psi_some_avg10")), _percent(notice.get("psi_full_avg10"))
        window.append((wall, available, some, full))

    def kill(self) -> None:
        """A kill in the file: the window before it is kept."""
        self.dropped += max(len(self._kept) + len(self._window) - self._MOST, 0)
        self._kept.extend(self._window)
        self._window.clear()

    def host(self, host: str | None) -> None:
        if host is not None:
            self._hosts.add(host)

    def kept(self) -> tuple[ProbeSample, ...]:
        self.kill()  # the file's last half hour: a kill the journal holds may follow it
        # One watcher's file is one machine's: its samples are that host's when its lines name one.
        host = next(iter(self._hosts)) if len(self._hosts) == 1 else None
        return tuple(ProbeSample(t, kb, some, full, host) for t, kb, some, full in sorted(self._kept))

    def problem(self) -> str | None:
        said = []
        if self.unreadable:
            said.append(f"{self.unreadable:,} sample(s) without a time or a MemAvailable were skipped")
        if self.dropped:
            said.append(f"{self.dropped:,} sample(s) before the latest kills' were not kept, to bound memory")
        return "; ".join(said) or None


def _figure(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MOST_KB


def _percent(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 100:
        return float(value)
    return None


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
