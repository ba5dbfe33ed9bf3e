"""Records → events: each record goes to the message kinds whose anchor it holds (messages.py)."""

from __future__ import annotations

import functools
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import pairwise, product
from typing import Any

from oomtrace import events as ev
from oomtrace.frozen import field_names, replace
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages import MAX_MESSAGE, MESSAGES, MessageKind, begins_known, tasks_line
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
_HEX = re.compile(r"0x[0-9a-f]{1,16}")

# Report lines that stand alone although no event is made of them: never the rest of a line.
_STANDALONE = (
    "Call Trace",
    "<TASK>",
    "</TASK>",
    "Tasks state",
    "Modules linked in",
    "Code:",
    "RIP:",
    "RSP:",
    "Workqueue:",
)
# The beginning of a unit's name, all a line cut inside it holds (messages/units.py's _UNIT).
_UNIT_PIECE = re.compile(r"[\w@.:\\-]{1,256}")
# Events whose text fields are paths or names, which a wrap can cut.
_PATHS = (ev.TaskInMemcg, ev.MemcgStatsHeader, ev.CpusetLine)
# Lines at least this long may have been wrapped: terminals cut at 80, mail clients re-flow at a
# space before 60 to 78, so a re-flowed line ends up to a long word short of the width (a
# 60-column mail's lines of 45 to 60 characters kept kill lines apart at 60).
_WRAP_WIDTH = 45
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


def parse_records(records: Iterable[Record]) -> Iterator[tuple[Record, ev.Event | None]]:
    """Every record with its event, in order; a line a terminal or a paste wrapped is joined
    back to the line it continues.

    A continuation has no prefix of its own and means nothing alone, and the line before it
    reads as more once joined (a kill line's sizes, lowmemorykiller's `on behalf of` lines).
    """
    held: tuple[Record, ev.Event | None] | None = None
    # The pieces before `held` that it continues, none of which reads alone or joined so far (a
    # line cut twice: `... lowmemorykiller: Kill` / `'com.x' (17933), uid 10446,` / `oom_score_adj
    # 0 to free ...`): the next piece may complete them all. Handed on as they are otherwise.
    pending: list[Record] = []
    for record in records:
        event = parse_record(record)
        if held is not None and held[1] is None and (whole := _after_its_prefix(held[0], record, event)):
            yield from ((piece, None) for piece in pending)
            pending = []
            held = whole
            continue
        after_prefix = bool(pending) and _is_prefix_alone(pending[-1])  # the name begins a line down
        whole = None
        if held is not None and held[1] is None and isinstance(event, ev.UnitRecord):
            whole = _unit_name_completed(held[0], record, event, after_prefix)
            if whole is None and pending and not after_prefix:
                # The name cut twice (a wrap, then a mail's soft break): its first two pieces.
                start = _joined(pending[-1], held[0], "")
                if (whole := _unit_name_completed(start, record, event)) is not None:
                    pending = pending[:-1]
        if held is not None and whole is not None:
            if pending and (prefixed := _after_its_prefix(pending[-1], whole[0], whole[1])) is not None:
                pending, whole = pending[:-1], prefixed  # the prefix alone on the line above the name
            yield from ((piece, None) for piece in pending)
            pending = []
            held = whole
            continue
        if held is not None and (
            (event is None and _continues(held[0], record)) or _rest_of_header(held[0], record, event)
        ):
            last = next(
                (
                    (joined, joined_event)
                    for glue in _glues(held[0], record)
                    if (joined_event := parse_record(joined := _joined(held[0], record, glue))) is not None
                    and _more(joined_event, held[1])
                ),
                None,
            )
            whole = _whole_line(pending, held[0], record, last[1] if last else None) if pending else None
            if whole is not None:
                pending, held = [], whole
                continue
            if last is not None:
                yield from ((piece, None) for piece in pending)
                pending, held = [], last
                continue
            chain = pending or held[0].prefixed
            if held[1] is None and event is None and len(pending) < _MAX_PENDING and chain:
                pending.append(held[0])
            else:
                yield from ((piece, None) for piece in pending)
                pending = []
                yield held
            held = (record, event)
            continue
        yield from ((piece, None) for piece in pending)
        pending = []
        if held is not None:
            yield held
        held = (record, event)
    yield from ((piece, None) for piece in pending)
    if held is not None:
        yield held


# A line is joined back from at most this many pieces before the one that completes it.
_MAX_PENDING = 2


def _whole_line(
    pending: list[Record], held: Record, record: Record, last: ev.Event | None
) -> tuple[Record, ev.Event] | None:
    """The line a twice-cut paste left in pieces (`pending`, `held`, then `record`), joined whole
    where that reads: where the last two pieces alone read nothing, or read a unit record whose
    name the first piece began (`... systemd[1837]: vte-spawn-dbb4a7` / `5e-031f-...scope:
    systemd-oomd killed 12` / ` process(es) in this unit.`)."""
    pieces = [*pending, held, record]
    options = [_glues(before, after) for before, after in pairwise(pieces)]
    for glues in product(*options):
        joined = pieces[0]
        for piece, glue in zip(pieces[1:], glues, strict=True):
            joined = _joined(joined, piece, glue)
        whole = parse_record(joined)
        if whole is None:
            continue
        head = pieces[0].message.strip()
        if last is None or (type(whole) is type(last) and not head):
            return joined, whole  # or the first piece is a prefix alone: the same, with its stamp
        if (
            isinstance(whole, ev.UnitRecord)
            and isinstance(last, ev.UnitRecord)
            and _UNIT_PIECE.fullmatch(head)
            and whole.unit == head + (last.unit or "")
        ):
            return joined, whole
    return None


def _continues(previous: Record, record: Record) -> bool:
    """Can `record` be the rest of `previous`? It has no prefix of its own (or the same stamp and
    an indent, as /proc/kmsg prints the lines of one multi-line record), and `previous` looks cut:
    as long as a terminal or mail line, or ending where the kernel's own lines go on."""
    indented = record.message[:2].isspace() and record.stamp == previous.stamp
    if record.prefixed and not indented:
        return False  # first: most lines of no event are a report's own, each with its prefix
    text = record.message.strip()
    if not text or text.strip(".… ") == "" or record.source != previous.source:
        return False
    # The next line of the source (or more of the same line: a CR or glued records): a scan
    # that skipped the lines between would join pieces that were never one (`anon-rss:316` and
    # `3332kB oom_score_adj:200` of a kill line wrapped into four, its middle pieces skipped).
    if not 0 <= record.line_no - (previous.line_no + previous.raw.count("\n")) <= 1:
        return False
    if text.startswith(_STANDALONE) or begins_known(text):
        return False
    if previous.is_kernel != record.is_kernel and record.prefixed:
        return False
    head = previous.message.rstrip()
    if _is_prefix_alone(previous):
        return True  # its message is on the next line
    return len(previous.raw.rstrip()) >= _WRAP_WIDTH or head.endswith((",", "because")) or indented


def _after_its_prefix(
    previous: Record, record: Record, event: ev.Event | None
) -> tuple[Record, ev.Event] | None:
    """A prefix alone on its line (`Dec 18 19:34:56 user-desktop systemd[1837]:`, a mail
    re-flowed right after it) and the message that reads on the next: one line, with the
    prefix's time, host and writer."""
    if event is None or not _is_prefix_alone(previous) or record.prefixed:
        return None
    below = record.line_no - (previous.line_no + previous.raw.count("\n"))
    if record.source != previous.source or below != 1:
        return None
    joined = _joined(previous, record, " ")
    whole = parse_record(joined)
    return (joined, whole) if whole is not None and type(whole) is type(event) else None


def _is_prefix_alone(record: Record) -> bool:
    return record.prefixed and not record.message.strip()


def _unit_name_completed(
    previous: Record, record: Record, event: ev.Event | None, after_prefix: bool = False
) -> tuple[Record, ev.UnitRecord] | None:
    """systemd's unit record wrapped inside its unit's name: the rest (`e5af7579d2.scope:
    systemd-oomd killed 12 process(es) in this unit.`) reads as a record of its own, of a unit
    named by the name's last piece. Joined to the cut line before it (which meant nothing alone),
    it names the whole unit: that record, or None."""
    if not isinstance(event, ev.UnitRecord) or event.unit is None or record.prefixed:
        return None
    # The cut line's message is the name's beginning and nothing else (`vte-spawn-dbb4a75e-5d`):
    # never a whole line that ends without a space (`Started x.scope - Terminal.`).
    piece = previous.message.strip()
    if record.source != previous.source or not _UNIT_PIECE.fullmatch(piece):
        return None
    if not 0 <= record.line_no - (previous.line_no + previous.raw.count("\n")) <= 1:
        return None
    if len(previous.raw.rstrip()) < _WRAP_WIDTH and not after_prefix:
        return None  # a short line is no cut one, unless it is the start of a prefix's message
    joined = _joined(previous, record, "")
    whole = parse_record(joined)
    if not isinstance(whole, ev.UnitRecord) or whole.kind != event.kind:
        return None
    return (joined, whole) if whole.unit == piece + event.unit else None


def _rest_of_header(previous: Record, record: Record, event: ev.Event | None) -> bool:
    """`tf-engine invoked` then ` oom-killer: gfp_mask=...`: a header wrapped right after its
    `invoked`, whose rest alone reads as 2.6.0's header (which prints no name, `?`)."""
    return (
        isinstance(event, ev.OomInvoked)
        and event.comm == "?"
        and not record.prefixed
        and record.source == previous.source
        and previous.message.rstrip().endswith(" invoked")
    )


def _glues(previous: Record, record: Record) -> tuple[str, ...]:
    """What stood where a line was cut: nothing (a terminal cuts inside a word) or a space (a
    mail client wraps at one and drops it). A rest indented alone was wrapped at a space (a
    terminal adds no indent); an indent every line has is the paste's (`_rest`)."""
    indent = _indent(record.message)
    return (" ",) if indent and not previous.raw.startswith(indent) else ("", " ")


def _indent(message: str) -> str:
    return message[: len(message) - len(message.lstrip())]


def _joined(previous: Record, record: Record, glue: str) -> Record:
    rest = record.message
    if glue:
        rest = rest.lstrip()
    elif (indent := _indent(rest)) and previous.raw.startswith(indent):
        rest = rest[len(indent) :]  # every line's indent, not the log's
    # Spaces after the cut are the paste's (a web page pads its lines), not the log's.
    head = previous.message.rstrip(" \t")
    return replace(previous, raw=f"{previous.raw}\n{record.raw}", message=head + glue + rest)


def _more(event: ev.Event, before: ev.Event | None) -> bool:
    """Does the joined line say more than the first part alone: it reads where the part did
    not, it fills fields the part left empty, or it completes a name the part cut?"""
    if before is None:
        return True
    if type(event) is not type(before):
        return False
    if isinstance(before, ev.UserspaceKill) and isinstance(event, ev.UserspaceKill) and before.cut:
        return not event.cut or len(event.reason) > len(before.reason)
    if isinstance(before, ev.Killed) and isinstance(event, ev.Killed) and before.comm_cut:
        return not event.comm_cut or len(event.comm) > len(before.comm)
    fields = [f for f in field_names(event) if f != "record"]
    now = sum(getattr(event, f) is not None for f in fields)
    then = sum(getattr(before, f) is not None for f in fields)
    if now != then:
        return now > then
    pairs = [(getattr(event, f), getattr(before, f)) for f in fields]
    changed = [(a, b) for a, b in pairs if a != b]
    grown = [isinstance(a, str) and isinstance(b, str) and a.startswith(b) for a, b in changed]
    # A number a terminal cut at the line's end (`adj 10` then `00,`), completed by the rest;
    # the text the event keeps grows with it.
    completed = [_digits_completed(a, b) for a, b in changed]
    if changed and any(completed) and all(c or g for c, g in zip(completed, grown, strict=True)):
        return True
    # A cgroup path the part cut, completed by the rest (free text such as a hardware name
    # would "grow" by any line).
    return bool(changed) and isinstance(event, _PATHS) and all(grown)


def _digits_completed(longer: object, part: object) -> bool:
    """Is `longer` the number `part` (an int, or a hex mask `0x2`) with more digits after them?"""
    if type(longer) is int and type(part) is int:
        longer, part = str(longer), str(part)
    elif not (
        isinstance(longer, str) and isinstance(part, str) and _HEX.fullmatch(longer) and _HEX.fullmatch(part)
    ):
        return False
    return len(longer) > len(part) and longer.startswith(part)


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
