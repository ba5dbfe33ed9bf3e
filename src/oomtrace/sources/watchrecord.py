"""A `watch --record` file read back: the log lines behind each warning and kill it kept.

One JSON object a line, as the watcher wrote them:

    {"schema": "oomtrace/1", "event": "warning", "kind": "psi-some", "time": "...",
     "text": "memory pressure some avg10 23.5% (warn at 10.0%)",
     "lines": [{"time": "...", "uptime_s": null, "ident": "oomtrace-watch", "host": null,
                "message": "warning psi-some: memory pressure some avg10 23.5% (warn at 10.0%)"}]}

Each entry of `lines` becomes a record, so the watcher's own warnings (PSI, MemAvailable, which
no log holds) join the story, and a kill whose report the journal never wrote to disk (a machine
that wedged) is read from here. A kill in both is one episode (episodes: kills read twice).
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
        with stream:
            for number, line in enumerate(BoundedLines(stream, self.path, "watch record").byte_lines(), 1):
                notice = load_object(line)
                if notice is None:
                    unreadable += line.strip() != b""
                    continue
                for entry in notice.get("lines") or ():
                    record = self._record(entry, number)
                    if record is not None:
                        yield record
        if unreadable:
            self.add_problem(
                f"{unreadable:,} line(s) not JSON (the last is cut when the watcher was killed mid-write)"
            )

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
