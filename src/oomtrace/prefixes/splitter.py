"""The splitter: one source's lines cut into records, the prefix a file uses learnt and sliced.

`split` reads a line the long way (JSON, journalctl -o verbose, lines glued or joined, then
the grammar: grammar.py) and learns its prefix when the grammar read one of learnt.py's shapes
and nothing more; the lines after it of that prefix or its shape are cut with a slice. Those
fast paths (`_learnt`, `_learnt_shape`, `_dmesg_lines`) were tuned line by line (see the git
log of prefixes.py): they read the state's fields themselves, on purpose, instead of calling
the families.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from oomtrace.prefixes.cut import Split
from oomtrace.prefixes.dmesg import LEARNABLE_UPTIME, UPTIME
from oomtrace.prefixes.glued import JOINED, cr_ended_lines, glued_lines, holds_joined_lines
from oomtrace.prefixes.grammar import split_prefixes
from oomtrace.prefixes.journal import split_verbose
from oomtrace.prefixes.jsonlines import split_json
from oomtrace.prefixes.learnt import SYSLOG_CLOCK, Learnt, learnable, learnt_prefix, plain_message
from oomtrace.prefixes.stamps import local
from oomtrace.prefixes.state import BOOT_JUMP_S, ReadState
from oomtrace.records import Record, Stamp


@dataclass
class LineSplitter(ReadState):
    """Cuts prefixes off the lines of one source, keeping the state that needs (ReadState) and
    the prefix it learnt."""

    _same: Learnt | None = None
    """The last line's prefix and what it reads as, when the grammar read nothing else in it:
    every line of a report has the same one, and `split` cuts it with a slice."""

    def checkpoint(self) -> tuple[object, ...]:
        """The state that reading lines changes, to undo lines read ahead (see `rollback`); its
        last item is the learnt prefix, which only makes reading quicker (`read_state` is the
        rest)."""
        return (*self.read_state(), self._same)

    def rollback(self, state: tuple[object, ...]) -> None:
        # The learnt prefix comes back too: forgotten, the next line took the full grammar (the
        # first Xid line of each stretch a big file's scan counts, after its anchor line was
        # read ahead: 2 % of `list` on a crash loop).
        *read, same = state
        self._previous, self._boot, self._last_uptime, boot_ids, self._decoration, verbose, clock, qp = read  # type: ignore[assignment]
        self._last_clock = clock  # type: ignore[assignment]
        self._quoted_printable = qp  # type: ignore[assignment]
        self._same = same  # type: ignore[assignment]
        self._boot_ids = dict(boot_ids)  # type: ignore[call-overload]
        self._verbose = dict(verbose) if verbose is not None else None  # type: ignore[call-overload]

    def split(self, line: str, line_no: int) -> list[Record]:
        """Records for one input line: usually one; several for `#012`-joined rsyslog lines."""
        line = line.rstrip("\r\n")
        if "\r" in line and (pieces := cr_ended_lines(line)) is not None:
            return [r for piece in pieces for r in self.split(piece, line_no)]
        learnt = self._learnt(line)
        if learnt is not None:
            message, same = learnt
            if "#012" not in message:
                return [self._learnt_record(line, line_no, message, same)]
            return self._records(line, line_no, Split(same.stamp, "kernel", same.host, None, message, True))
        self._same = None
        if line.startswith("{"):
            from_json = split_json(self, line, line_no)
            if from_json is not None:
                return from_json
        if self._verbose is not None or line[:1].isalpha() or line[:1].isdigit():
            from_verbose = split_verbose(self, line, line_no)
            if from_verbose is not None:
                return from_verbose
        glued = glued_lines(line)
        if glued is not None:
            return [r for piece in glued for r in self.split(piece, line_no)]
        if holds_joined_lines(line):
            pieces = JOINED.split(line)
            return [r for piece in pieces if piece.strip() for r in self.split(piece, line_no)]
        split = split_prefixes(self, line)
        self._learn_same(line, split)
        return self._records(line, line_no, split)

    def split_block(self, text: str, line_no: int) -> list[Record]:
        """Records for consecutive lines (`text`: them joined by newlines, the first numbered
        `line_no`), as `split` of each would give: a report's body, whose lines share one
        learnt prefix, in one call (a call a line was a tenth of `list` on a crash loop)."""
        lines = text.split("\n")
        if "\r" in text:  # `split` cuts the carriage returns first
            return [
                record for number, line in enumerate(lines, line_no) for record in self.split(line, number)
            ]
        records: list[Record] = []
        index = 0
        while index < len(lines):
            index = self._dmesg_lines(lines, index, line_no, records)
            if index == len(lines):
                break
            line, number = lines[index], line_no + index
            learnt = self._learnt(line)
            if learnt is not None and "#012" not in learnt[0]:
                records.append(self._learnt_record(line, number, *learnt))
            else:
                records.extend(self.split(line, number))
            index += 1
        return records

    def _dmesg_lines(self, lines: list[str], start: int, line_no: int, records: list[Record]) -> int:
        """The records of `lines` from `start` on while each is a line after a learnt dmesg
        prefix (an `[ uptime] ` alone) that `_learnt_shape` would read, as it reads them, put on
        `records`; returns the index of the first line it did not read. Most lines of most
        reports are such lines, each with an uptime of its own: in one loop, the learnt prefix
        made once for the last line, they cost 3.4 us a line against 6.0 for a call a line
        (and five calls a line before that)."""
        same = self._same
        if same is None or same.date or same.tag or not same.uptime:
            return start
        source, wall, host = self.source, same.stamp.wall, same.host
        boot, last_uptime = self._boot, self._last_uptime
        learnable = LEARNABLE_UPTIME.match
        stamp: Stamp | None = None
        prefix = ""
        for at in range(start, len(lines)):
            line = lines[at]
            match = learnable(line)
            if match is None:
                break
            cut = match.group(0)
            message = self._after_same(line, len(cut))
            if message is None or "#012" in message:  # and the rsyslog escape `split` cuts at
                break
            prefix = cut
            seconds = float(match.group(1))
            # _stamp's reading of an uptime (_boot_for and _remember).
            if last_uptime is not None and seconds < last_uptime - BOOT_JUMP_S:
                boot += 1
            last_uptime = seconds
            stamp = Stamp(wall, seconds, cut.strip(), boot)
            record = Record(source, line_no + at, line, message, stamp, "kernel", host, 0, None, True)
            records.append(record)
        else:
            at = len(lines)
        if stamp is not None:
            self._boot, self._last_uptime, self._previous = boot, last_uptime, stamp
            self._same = Learnt(prefix, stamp, host, "", "", True)
        return at

    def _learnt(self, line: str) -> tuple[str, Learnt] | None:
        """(message, what its prefix reads as) when the line is the learnt prefix and a message
        the full reading would not cut further (`_after_same`); None sends it the long way."""
        same = self._same
        if same is None:
            return None
        if line.startswith(same.prefix):
            message = self._after_same(line, len(same.prefix))
            return None if message is None else (message, same)
        return self._learnt_shape(line, same)

    def _learnt_shape(self, line: str, same: Learnt) -> tuple[str, Learnt] | None:
        """A line of the learnt prefix's shape with a stamp of its own: a real kernel stamps each
        line of a report a few microseconds after the one before, so an `[ uptime] ` (dmesg's,
        kern.log's) is seldom the same twice, and a syslog stamp's second changes now and then.
        The full reading of such a line (`_known`, then `_after_uptime` for dmesg's) makes this
        stamp and this message, and `_learn_same` would learn its prefix: both are done here as
        they are there, the message tested as `_after_same` tests it."""
        if not line.startswith(same.tag, len(same.date)):
            return None
        date, wall = line[: len(same.date)], same.stamp.wall
        if date != same.date and (wall := self._same_day(date, same)) is None:
            return None
        end = len(same.date) + len(same.tag)
        match = None
        if same.uptime:
            match = UPTIME.match(line, end) if line[end : end + 1] == "[" else None
            if match is None:
                return None
            end = match.end()
        if not learnable(line[:end]):
            return None
        message = self._after_same(line, end)
        if message is None:
            return None
        stamp = self._stamp(wall, date, match)
        self._same = Learnt(line[:end], stamp, same.host, date, same.tag, same.uptime)
        return message, self._same

    def _same_day(self, date: str, same: Learnt) -> datetime | None:
        """The wall time of a syslog stamp of the learnt one's day and another time of day
        (`Nov 28 08:01:41` after `Nov 28 08:01:40`), as `_syslog` reads it; None otherwise."""
        clock = SYSLOG_CLOCK.fullmatch(date, 7)
        wall = same.stamp.wall
        if clock is None or wall is None or date[:7] != same.date[:7]:
            return None
        hour, minute, second = (int(group) for group in clock.groups())
        return local(wall.year, wall.month, wall.day, hour, minute, second, 0, self.zone)

    def _learnt_record(self, line: str, line_no: int, message: str, same: Learnt) -> Record:
        """The one record of a line `_learnt` read, made as `_records` makes it."""
        return Record(self.source, line_no, line, message, same.stamp, "kernel", same.host, 0, None, True)

    def _records(self, line: str, line_no: int, split: Split) -> list[Record]:
        message = split.message
        # rsyslog escapes newlines in multi-line kernel records as #012 (and tabs as #011).
        parts = message.replace("#011", "\t").split("#012") if "#012" in message else [message]
        return [
            Record(
                self.source,
                line_no,
                line,
                part,
                split.stamp,
                split.ident,
                split.host,
                0,
                split.pid,
                split.prefixed,
            )
            for part in parts
        ]

    def _learn_same(self, line: str, split: Split) -> None:
        """Keep the line's prefix for the lines after it when the grammar read one of the
        `_LEARNABLE` shapes and nothing more (no pid, no decoration, no cut)."""
        if (
            split.ident == "kernel"
            and split.pid is None
            and split.prefixed
            and split.message
            and not self._decoration
            and self._verbose is None
            and line.endswith(split.message)
        ):
            self._same = learnt_prefix(line[: len(line) - len(split.message)], split)

    def _after_same(self, line: str, cut: int) -> str | None:
        """The message after the learnt prefix, when the full reading would give the same
        split (the same stamp, nothing more to cut); None sends the line the long way."""
        message = line[cut:]
        if holds_joined_lines(line):
            return None
        return message if plain_message(message) else None
