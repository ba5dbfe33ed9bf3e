"""What the sources said besides reports: each one's counts and span, hosts, boot times, unparsed lines."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from oomtrace.episodes.moments import minus_seconds, moment_of
from oomtrace.frozen import replace
from oomtrace.model import HostSpan, Moment, SourceSummary, Unparsed
from oomtrace.records import Record, Stamp
from oomtrace.serverlines import program_oom_error

MAX_UNPARSED_KEPT = 50


class _SourceInfo:
    """What the summary says of one source, counted as its records are fed (typed fields: a dict
    of objects needed a conversion and a type-checker exemption at each count)."""

    __slots__ = (
        "events",
        "first",
        "given_boot",
        "kind",
        "last",
        "later_boot",
        "problem",
        "program_oom",
        "recognised",
        "records",
    )

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.records = 0
        self.recognised = 0
        self.events = 0
        self.first: tuple[Record, int] | None = None
        """The first record and its seq."""
        self.last: tuple[Record, int] | None = None
        self.problem: str | None = None
        self.program_oom: str | None = None
        """The first program's own out-of-memory error among lines of no known prefix."""
        self.given_boot = False
        """Was --boot-time given for it (the boot time of its first boot)?"""
        self.later_boot: Record | None = None
        """With --boot-time, the first line of a later boot (its uptime went back) that has no
        boot time of its own: its lines and those after it have no wall time."""


class SourceLedger:
    """Counts every record fed; learns each source's boot times, which `resolve` then uses."""

    def __init__(self) -> None:
        self._sources: dict[str, _SourceInfo] = {}
        self._offsets: dict[tuple[str, int], datetime] = {}
        """The boot time of each (source, boot): what turns an uptime into a wall time."""
        self._hosts: dict[str, None] = {}
        self._host_spans: dict[str, tuple[datetime, datetime]] = {}
        """Each host's first and last wall time: a host with no kill still has a span to show."""
        self._host_damage: dict[str, tuple[str, datetime | None]] = {}
        self.unparsed: list[Unparsed] = []
        self.unparsed_count = 0

    # ---- what a source says of itself ----------------------------------------------

    def begin(self, name: str, kind: str, boot_time: datetime | None) -> None:
        info = self._sources[name] = _SourceInfo(kind)
        if boot_time is not None:
            self._offsets[(name, 0)] = boot_time
            info.given_boot = True

    def set_record_count(self, source: str, count: int) -> None:
        self._sources.setdefault(source, _SourceInfo("file")).records = count

    def set_problem(self, source: str, problem: str) -> None:
        self._sources.setdefault(source, _SourceInfo("file")).problem = problem

    def set_host_spans(self, spans: Mapping[str, tuple[datetime, datetime]]) -> None:
        for host, (first, last) in spans.items():
            self._hosts.setdefault(host, None)
            self._widen(host, first, last)

    def set_host_damage(self, damage: Mapping[str, tuple[str, datetime | None]]) -> None:
        for host in damage:
            self._hosts.setdefault(host, None)
        self._host_damage.update(damage)

    def kind(self, source: str) -> str | None:
        info = self._sources.get(source)
        return info.kind if info is not None else None

    # ---- what each record adds --------------------------------------------------------

    def note(self, record: Record, seq: int) -> _SourceInfo:
        """Counts the record in its source's summary and widens the spans it sets; returns the
        source's summary."""
        if record.host is not None and record.host not in self._hosts:
            self._hosts[record.host] = None
        info = self._sources.get(record.source)
        if info is None:
            info = self._sources[record.source] = _SourceInfo("file")
        info.records += 1
        stamp = record.stamp
        if stamp.wall is None and stamp.uptime is None and stamp.clock is None:
            if record.ident is not None:
                info.recognised += 1
            elif info.program_oom is None and info.recognised == 0:
                # Only while nothing in the source looked like a kernel log: a real one pays
                # nothing, and the words only matter when the source is refused.
                said = program_oom_error(record.raw)
                if said is not None:
                    info.program_oom = f"{said!r} at line {record.line_no}"
            return info
        info.recognised += 1
        if stamp.boot and info.given_boot and info.later_boot is None and stamp.wall is None:
            info.later_boot = record
        if stamp.wall is not None and stamp.uptime is not None:
            boot = minus_seconds(stamp.wall, stamp.uptime)
            if boot is not None:
                self._offsets.setdefault((record.source, stamp.boot), boot)
        # The span is from the earliest wall time to the latest, not from the first line to the
        # last: entries of a store read a host at a time (sources/journal.py) go back in time,
        # and so does a clock set back (an NTP step, a VM restored), which made the summary say
        # "from 12:58 to 09:00" of a log that held a kill at 13:12.
        if info.first is None or _earlier(stamp, info.first):
            info.first = (record, seq)
        if not _earlier(stamp, info.last):
            info.last = (record, seq)
        if record.host is not None and stamp.wall is not None:
            self._widen(record.host, stamp.wall, stamp.wall)
        return info

    def note_unparsed(self, record: Record) -> None:
        self.unparsed_count += 1
        if len(self.unparsed) < MAX_UNPARSED_KEPT:
            self.unparsed.append(Unparsed(record.source, record.line_no, record.message))

    def _widen(self, host: str, first: datetime, last: datetime) -> None:
        known = self._host_spans.get(host)
        if known is not None:
            first, last = min(first, known[0]), max(last, known[1])
        self._host_spans[host] = (first, last)

    # ---- what it tells ------------------------------------------------------------------

    def resolve(self, moment: Moment) -> Moment:
        """Fill a wall time from uptime once the boot time of that source is known."""
        if moment.time is not None or moment.uptime_s is None:
            return moment
        boot = self._offsets.get((moment.source, moment.boot))
        if boot is None:
            return moment
        time = minus_seconds(boot, -moment.uptime_s)
        return replace(moment, time=time) if time is not None else moment

    def hosts(self) -> tuple[str, ...]:
        return tuple(self._hosts)

    def host_spans(self) -> tuple[HostSpan, ...]:
        return tuple(
            HostSpan(h, *self._host_spans.get(h, (None, None)), *self._host_damage.get(h, (None, None)))
            for h in self._hosts
        )

    def summaries(self) -> tuple[SourceSummary, ...]:
        return tuple(self._summary(name, info) for name, info in self._sources.items())

    def _summary(self, name: str, info: _SourceInfo) -> SourceSummary:
        def moment(value: tuple[Record, int] | None) -> Moment | None:
            if value is None:
                return None
            record, seq = value
            return self.resolve(moment_of(record, seq))

        return SourceSummary(
            name=name,
            kind=info.kind,
            records=info.records,
            recognised=info.recognised,
            events=info.events,
            first=moment(info.first),
            last=moment(info.last),
            problem=_with_later_boot(info, self._offsets.get((name, info.later_boot.stamp.boot)))
            if info.later_boot is not None
            else info.problem,
            program_oom=info.program_oom,
        )


def _with_later_boot(info: _SourceInfo, learnt: datetime | None) -> str | None:
    """The source's problem, and that --boot-time did not date a later boot's lines (unless that
    boot's time was learnt from a line stamped both ways)."""
    record = info.later_boot
    if record is None or learnt is not None:
        return info.problem
    uptime = f" (uptime {record.stamp.uptime:,.0f} s)" if record.stamp.uptime is not None else ""
    said = (
        f"the uptime went back at line {record.line_no:,}{uptime}: a later boot, which --boot-time "
        "(the first boot's) does not date; its lines and its kills have no wall time"
    )
    return f"{info.problem}; {said}" if info.problem else said


def _earlier(stamp: Stamp, kept: tuple[Record, int] | None) -> bool:
    """Whether a stamp is before the wall time of a kept (record, seq)."""
    if kept is None:
        return False
    wall = kept[0].stamp.wall
    return wall is not None and stamp.wall is not None and stamp.wall < wall
