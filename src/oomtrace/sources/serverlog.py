"""A model server's own log, read to its end: its last lines, stamps and what it said it would spend."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from datetime import datetime, timezone, tzinfo

from oomtrace.errors import InputError
from oomtrace.frozen import Frozen
from oomtrace.keep import FirstAndLast
from oomtrace.serverlines import PlanItem, ending_of, plan_items, stamp_of, warns_of_memory, without_stamp
from oomtrace.sources.base import DAMAGED
from oomtrace.sources.lines import open_text

_KEEP_LAST = 200
MAX_WARNINGS = 20


class ServerLogFacts(Frozen):
    path: str
    lines: int
    last_line: str | None
    last_time: datetime | None
    last_time_from: str | None
    """"timestamp" (the last stamped line) or "mtime" (the file's modification time)."""
    ending: str
    """"silent", "out-of-memory-error", "crash", "clean" or "killed"."""
    ending_line: str | None
    plan: tuple[PlanItem, ...]
    warnings: tuple[tuple[str, datetime], ...] = ()
    """Stamped lines that said memory was short, other than the one it ended with (the first
    and last MAX_WARNINGS of them): early warnings beside the kernel's."""


def read_server_log(path: str, zone: tzinfo, year: int | None = None) -> ServerLogFacts:
    """Stream the file once, keeping only its tail and its plan lines."""
    mtime = _mtime(path)
    reference_year = year or (mtime.year if mtime else datetime.now(zone).year)
    with open_text(path, what="server log") as text:
        lines = ((line.rstrip("\n"), stamp_of(line, zone, reference_year).time) for line in text)
        try:
            facts = summarize(path, lines, mtime.astimezone(zone) if mtime else None)
        except DAMAGED as error:
            # Unlike a kernel log, a server log is read for its ending, and that is what is lost.
            raise InputError(
                f"cannot read {path} to its end: {error}",
                hint="its last lines, which tell how the server ended, are lost; pass an intact copy",
            ) from None
    if facts.lines == 0:
        raise InputError(f"{path} is empty", hint="pass the server's own log (stdout/stderr capture)")
    return facts


def summarize(
    name: str, lines: Iterable[tuple[str, datetime | None]], mtime: datetime | None
) -> ServerLogFacts:
    """Facts of a server log from its lines, each with the time it carries (or None)."""
    tail: deque[str] = deque(maxlen=_KEEP_LAST)
    plan: dict[str, PlanItem] = {}
    last_stamped: datetime | None = None
    count = 0
    warnings: FirstAndLast[tuple[str, datetime]] = FirstAndLast(MAX_WARNINGS, MAX_WARNINGS)
    for line, time in lines:
        count += 1
        tail.append(line)
        if time is not None:
            last_stamped = time
            if warns_of_memory(line):
                warnings.append((without_stamp(line).strip(), time))
        for item in plan_items(line):
            plan[item.label] = item  # a later line (a reload) replaces an earlier one
    last = next((line for line in reversed(tail) if line.strip()), None)
    ending, ending_line = ending_of(list(tail))
    last_time: datetime | None = None
    source: str | None = None
    if last_stamped is not None:
        last_time, source = last_stamped, "timestamp"
    elif mtime is not None:
        # No stamps (llama-server's default): the last write is the file's modification time.
        last_time, source = mtime, "mtime"
    ended = without_stamp(ending_line or "").strip()
    survived = tuple(w for w in warnings if w[0] != ended)
    return ServerLogFacts(
        name, count, last, last_time, source, ending, ending_line, tuple(plan.values()), survived
    )


def _mtime(path: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(os.stat(path).st_mtime, timezone.utc)
    except OSError:
        return None
