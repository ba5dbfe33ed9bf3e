"""Records → events: each record goes to the message kinds whose anchor it holds (messages.py).

The lines a paste wrapped are joined back before this by rejoin.py (parse_records).
"""

from __future__ import annotations

import functools
import re
import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any

from oomtrace import events as ev
from oomtrace.frozen import field_names, replace
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages import MAX_MESSAGE, MESSAGES, MessageKind, tasks_line
from oomtrace.records import Record

_FRAME = re.compile(
    r"(?:\[<[0-9a-fA-F]+>\] )?(?P<unsure>\? )?(?P<fn>[A-Za-z_.$][\w.$]*)\+0x[0-9a-fA-F]+/0x[0-9a-fA-F]+"
    r"(?: \[(?P<mod>[\w-]+)\])?"
)
_COUNTERS = re.compile(r"(?:[\w()]+:-?\d{1,20}\s*)+")
_COUNTER = re.compile(r"([\w()]+):(-?\d{1,20})")
_MEMCG_STAT = re.compile(r"(?P<name>[a-z_]+) (?P<value>\d{1,20})")
# Tasks tables print a process name last; the columns before it are numbers.
_INT = re.compile(r"-?\d{1,20}")

_KERNEL_KINDS = tuple(k for k in MESSAGES if k.origin in ("kernel", "any"))
_OTHER_KINDS = tuple(k for k in MESSAGES if k.origin != "kernel")
# After this many lines the anchor test goes to Hyperscan, when it is installed: one scan of a
# line finds every anchor in it, in a sixth of the time of a Python loop of `in` tests (about 1
# against 6 microseconds a line, measured on a crash loop's reports); importing and compiling it
# costs more than a small log takes to read.
_HYPERSCAN_AFTER = 20_000


class _Anchors:
    """The anchors of some message kinds, each once, with the positions (registry order) of the
    kinds it stands for: one pass over the anchors per record instead of a generator per kind."""

    def __init__(self, kinds: tuple[MessageKind, ...]) -> None:
        table: dict[str, list[int]] = {}
        for index, kind in enumerate(kinds):
            for anchor in kind.anchors:
                table.setdefault(anchor, []).append(index)
        self.table = tuple((anchor, tuple(indexes)) for anchor, indexes in table.items())
        self._tested = 0
        self._database: Any = None
        """The compiled Hyperscan database; None before it is worth it, False if unavailable."""
        self._scratch: Any = None  # hyperscan.Scratch, once the database is compiled
        self._threads = threading.local()  # a scratch space is one thread's at a time

    def kinds_in(self, text: str) -> list[int]:
        """The positions of the kinds whose anchors `text` holds, in registry order."""
        if self._database is None:
            self._tested += 1
            if self._tested > _HYPERSCAN_AFTER:
                self._database, self._scratch = _compiled(self.table)
        if self._database:
            return self._scan(text)
        candidates = [indexes for anchor, indexes in self.table if anchor in text]
        if not candidates:
            return []
        return sorted({i for indexes in candidates for i in indexes})

    def _scan(self, text: str) -> list[int]:
        scratch = getattr(self._threads, "scratch", None)
        if scratch is None:
            scratch = self._threads.scratch = self._scratch(self._database)
        found: list[int] = []
        # The anchors are ASCII, and every other character encodes to bytes of 0x80 and up (lone
        # surrogates too, with surrogatepass): a byte match is a character match.
        self._database.scan(
            text.encode("utf-8", "surrogatepass"),
            match_event_handler=_found,
            context=found,
            scratch=scratch,
        )
        if not found:
            return []
        table = self.table
        return sorted({i for anchor in found for i in table[anchor][1]})


def _found(anchor: int, start: int, end: int, flags: int, found: list[int]) -> None:
    found.append(anchor)


def _compiled(table: tuple[tuple[str, tuple[int, ...]], ...]) -> tuple[Any, Any]:
    """The anchors as one Hyperscan database (each reported once a line) and the scratch
    space's class; (False, None) without Hyperscan."""
    from oomtrace.prefilter import literal_database  # here: a short run never needs it

    database = literal_database([anchor for anchor, _ in table], once=[True] * len(table))
    if database is None:  # no Hyperscan: the Python loop, same answers
        return False, None
    import hyperscan

    return database, hyperscan.Scratch


_KERNEL_ANCHORS = _Anchors(_KERNEL_KINDS)
_OTHER_ANCHORS = _Anchors(_OTHER_KINDS)


# A crash loop prints one report again and again: its call frames, Mem-Info titles, zone lines
# and the rows of tasks that did not change come back word for word (of the 345,000 report lines
# of bench/make_log.py's 5,000 reports, 15,066 differ). What a message reads as depends on its
# text, its tag and its pid alone (no matcher reads the stamp, host or line), so each is read
# once and its event made again around the new record. Bounded: emptied when full, and a long
# line (rarely repeated) is not kept.
_MEMO_SIZE = 4096
_MEMO_LONGEST = 512
_memo: dict[tuple[str, str | None, int | None], tuple[type[ev.Event], tuple[Any, ...]] | None] = {}
_FIELDS: dict[type[ev.Event], tuple[str, ...]] = {}
"""Each event class's fields after `record`, in order."""


def parse_record(record: Record) -> ev.Event | None:
    """The event one record holds, or None for lines that do not matter here."""
    text = record.message[:MAX_MESSAGE].strip()
    if not text:
        return None
    if text[0] == "m" and text.startswith("message repeated "):
        return _repeated(record, text)
    if len(text) > _MEMO_LONGEST:
        return _parsed(record, text)
    key = (text, record.ident, record.pid)
    try:
        known = _memo[key]
    except KeyError:
        pass
    else:
        return known[0](record, *known[1]) if known is not None else None
    event = _parsed(record, text)
    if len(_memo) >= _MEMO_SIZE:
        _memo.clear()
    _memo[key] = None if event is None else (type(event), _values(event))
    return event


# rsyslog's reduction of repeated lines: `message repeated 7 times: [ EDID block 0 is all zeroes]`.
_REPEATED = lazy_compile(r"message repeated (?P<n>\d{1,9}) times: \[\s?(?P<message>.{1,4000}?)\s*\]$")


def _repeated(record: Record, text: str) -> ev.Event | None:
    """The message rsyslog held back, as a record that stands for all of them: the first was
    logged before, so the N it counts are N more (Record.repeats N - 1 on this one)."""
    match = _REPEATED.match(text)
    if match is None or not match["message"].strip() or int(match["n"]) < 1:
        return None
    inner = replace(record, message=match["message"], repeats=record.repeats + int(match["n"]) - 1)
    return parse_record(inner)


def _values(event: ev.Event) -> tuple[Any, ...]:
    """The event's fields after its record (the values it was made with)."""
    kind = type(event)
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = field_names(kind)[1:]
    return tuple(getattr(event, name) for name in names)


def _parsed(record: Record, text: str) -> ev.Event | None:
    if record.is_kernel:
        # Most lines of a report are tasks rows and call frames: read those before the anchors.
        if text[0] == "[" or "+0x" in text:
            event = _parse_unkeyed(record, text)
            if event is not None:
                return event
        event = _first_match(_KERNEL_KINDS, _KERNEL_ANCHORS, record, text)
        return event if event is not None else _parse_unkeyed(record, text)
    return _first_match(_OTHER_KINDS, _OTHER_ANCHORS, record, text)


def _first_match(
    kinds: tuple[MessageKind, ...], anchors: _Anchors, record: Record, text: str
) -> ev.Event | None:
    for index in anchors.kinds_in(text):
        kind = kinds[index]
        if kind.origin not in ("kernel", "any") and kind.origin != record.ident:
            continue
        event = kind.match(record, text)
        if event is not None:
            return event
    return None


# The tasks tables' columns, as the kernel's header names them, for a count of numbers after
# `[pid]` that only one kernel's layout prints: the rows of a table cut before its header are
# split by these. Seven numbers fit three layouts (3.x `nr_ptes swapents`, 4.15 on
# `pgtables_bytes swapents`, RHEL 6 `cpu oom_adj`) and six fit 2.6's `cpu oom_adj`: those stay
# unnamed, as a guess would rank the tasks by the wrong figures.
TABLE_LAYOUTS = {
    10: (
        "uid",
        "tgid",
        "total_vm",
        "rss",
        "rss_anon",
        "rss_file",
        "rss_shmem",
        "pgtables_bytes",
        "swapents",
        "oom_score_adj",
    ),
    8: ("uid", "tgid", "total_vm", "rss", "nr_ptes", "nr_pmds", "swapents", "oom_score_adj"),
}


def columns_by_count(rests: Iterable[str]) -> tuple[str, ...] | None:
    """The header of the one layout the rows' count of numbers after `[pid]` fits (the count
    most rows have: a name of digits adds one), or None."""
    counts = Counter(_leading_ints(rest) for rest in rests)
    if not counts:
        return None
    layout = TABLE_LAYOUTS.get(counts.most_common(1)[0][0])
    return ("pid", *layout, "name") if layout is not None else None


def _leading_ints(rest: str) -> int:
    tokens = rest.split()
    return next((i for i, token in enumerate(tokens) if not _INT.fullmatch(token)), len(tokens))


def split_task_row(rest: str, columns: tuple[str, ...]) -> dict[str, int | str] | None:
    """Columns of a tasks-table row after its `[pid]`, as the header names them.

    The name is last and may hold spaces, so only the numeric columns are split off.
    Without a header (a cut report) every leading integer is a column, named col2...
    """
    if len(rest) > _MEMO_LONGEST:
        return _split_task_row(rest, columns)
    row = _split_seen_row(rest, columns)
    return dict(row) if row is not None else None  # the caller's own, to change as it likes


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _split_seen_row(rest: str, columns: tuple[str, ...]) -> dict[str, int | str] | None:
    """Rows split before: a crash loop's tables repeat the rows of the tasks that did not change
    (bounded as the parse memo is). Callers get a copy: the cached dict is never handed out."""
    return _split_task_row(rest, columns)


def _split_task_row(rest: str, columns: tuple[str, ...]) -> dict[str, int | str] | None:
    numeric = [c for c in columns[1:] if c != "name"]
    if numeric:
        parts = rest.split(None, len(numeric))
        if len(parts) < len(numeric) or not all(_INT.fullmatch(p) for p in parts[: len(numeric)]):
            return None
        row: dict[str, int | str] = {c: int(p) for c, p in zip(numeric, parts[: len(numeric)], strict=True)}
        row["name"] = parts[len(numeric)] if len(parts) > len(numeric) else ""
        return row
    row = {}
    tokens = rest.split()
    index = 0
    while index < len(tokens) and _INT.fullmatch(tokens[index]):
        row[f"col{index + 2}"] = int(tokens[index])
        index += 1
    row["name"] = " ".join(tokens[index:])
    return row


def _parse_unkeyed(record: Record, text: str) -> ev.Event | None:
    """Lines with no distinctive literal: tasks rows, counters, call frames, memcg stats."""
    first = text[0]
    if first == "[":
        event = tasks_line(record, text)
        if event is not None:
            return event
    if "+0x" in text:
        frame = _FRAME.match(text)
        if frame:
            return ev.CallFrame(record, frame["fn"], frame["mod"], not frame["unsure"])
    if ":" in text and _COUNTERS.fullmatch(text):
        return ev.Counters(record, {k: int(v) for k, v in _COUNTER.findall(text)})
    if first.islower():
        match = _MEMCG_STAT.fullmatch(text)
        if match:
            return ev.MemcgStat(record, match["name"], int(match["value"]))
    return None
