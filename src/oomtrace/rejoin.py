"""A line a terminal or a paste wrapped, joined back to the line it continues (parse_records).

A continuation has no prefix of its own and means nothing alone, and the line before it reads as
more once joined (a kill line's sizes, lowmemorykiller's `on behalf of` lines). The rules here
decide which pieces are one line: only adjacent ones, a line cut twice from its three pieces, a
prefix left alone on its line with the message below it, a unit's name cut in two.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import pairwise, product

from oomtrace import events as ev
from oomtrace.frozen import field_names, replace
from oomtrace.messages import begins_known
from oomtrace.messages.units import UNIT_CHARS
from oomtrace.parse import parse_record
from oomtrace.records import Record

# A hex mask (`0x2`) that a cut at a line's end may have left short (_digits_completed).
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
# The beginning of a unit's name, all a line cut inside it holds.
_UNIT_PIECE = re.compile(rf"{UNIT_CHARS}{{1,256}}")
# Events whose text fields are paths or names, which a wrap can cut.
_PATHS = (ev.TaskInMemcg, ev.MemcgStatsHeader, ev.CpusetLine)
# Lines at least this long may have been wrapped: terminals cut at 80, mail clients re-flow at a
# space before 60 to 78, so a re-flowed line ends up to a long word short of the width (a
# 60-column mail's lines of 45 to 60 characters kept kill lines apart at 60).
_WRAP_WIDTH = 45


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
