"""The line-prefix grammar: every shape a kernel line arrives in."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from dateutil import tz
from hypothesis import given, settings
from hypothesis import strategies as st

from oomtrace.prefixes import LineSplitter, month_number
from oomtrace.records import Record

UTC = tz.UTC
MSG = "Out of memory: Killed process 7 (x) total-vm:1kB"


def split_one(line: str, **kwargs: object) -> tuple[object, ...]:
    splitter = LineSplitter("t", zone=UTC, year=2026, **kwargs)  # type: ignore[arg-type]
    (record,) = splitter.split(line, 1)
    return record.message, record.ident, record.host, record.stamp.wall, record.stamp.uptime


@pytest.mark.parametrize(
    ("line", "host", "wall", "uptime"),
    [
        # dmesg, dmesg -r, dmesg -T (English and German), dmesg --time-format iso
        (f"[ 5864.708440] {MSG}", None, None, 5864.70844),
        (f"<3>[ 5864.708440] {MSG}", None, None, 5864.70844),
        (
            f"[Sun Nov 29 13:08:59 2026] {MSG}",
            None,
            datetime(2026, 11, 29, 13, 8, 59, tzinfo=timezone.utc),
            None,
        ),
        (
            f"[Di Aug 12 03:54:03 2025] {MSG}",
            None,
            datetime(2025, 8, 12, 3, 54, 3, tzinfo=timezone.utc),
            None,
        ),
        (
            f"2026-11-29T09:51:58,459402+00:00 {MSG}",
            None,
            datetime(2026, 11, 29, 9, 51, 58, 459402, tzinfo=timezone.utc),
            None,
        ),
        # journalctl short, short-precise, short-iso, short-monotonic, cat
        (
            f"Nov 14 13:12:12 spark kernel: {MSG}",
            "spark",
            datetime(2026, 11, 14, 13, 12, 12, tzinfo=timezone.utc),
            None,
        ),
        (
            f"Nov 14 13:12:12.250000 spark kernel: {MSG}",
            "spark",
            datetime(2026, 11, 14, 13, 12, 12, 250000, tzinfo=timezone.utc),
            None,
        ),
        (
            f"2026-11-14T13:12:12+0100 spark kernel: {MSG}",
            "spark",
            datetime(2026, 11, 14, 12, 12, 12, tzinfo=timezone.utc),
            None,
        ),
        (f"[ 5864.708440] spark kernel: {MSG}", "spark", None, 5864.70844),
        (MSG, None, None, None),
        # kern.log with and without [seconds] after kernel:, syslog <facility>, kernel: only
        (
            f"Jan  5 15:19:27 host kernel: [ 5864.708440] {MSG}",
            "host",
            datetime(2026, 1, 5, 15, 19, 27, tzinfo=timezone.utc),
            5864.70844,
        ),
        (f"Jan  5 15:19:27 kernel: {MSG}", None, datetime(2026, 1, 5, 15, 19, 27, tzinfo=timezone.utc), None),
        (
            f"Apr 01 14:13:32 mysrv <kern.warning> kernel:{MSG}",
            "mysrv",
            datetime(2026, 4, 1, 14, 13, 32, tzinfo=timezone.utc),
            None,
        ),
        (
            f"Apr 01 14:13:32 mysrv: {MSG}",
            "mysrv",
            datetime(2026, 4, 1, 14, 13, 32, tzinfo=timezone.utc),
            None,
        ),
        (f"kernel:{MSG}", None, None, None),
        (f"kernel: {MSG}", None, None, None),
        # RFC 3339 rsyslog (Ubuntu 24.04 kern.log) and localized journald months
        (
            f"2026-11-14T13:12:12.123456+00:00 spark kernel: {MSG}",
            "spark",
            datetime(2026, 11, 14, 13, 12, 12, 123456, tzinfo=timezone.utc),
            None,
        ),
        (
            f"Dez 14 13:12:12 spark kernel: {MSG}",
            "spark",
            datetime(2026, 12, 14, 13, 12, 12, tzinfo=timezone.utc),
            None,
        ),
        (
            f"déc. 14 13:12:12 spark kernel: {MSG}",
            "spark",
            datetime(2026, 12, 14, 13, 12, 12, tzinfo=timezone.utc),
            None,
        ),
        (
            f"мая 14 13:12:12 spark kernel: {MSG}",
            "spark",
            datetime(2026, 5, 14, 13, 12, 12, tzinfo=timezone.utc),
            None,
        ),
        (
            f"11月 14 13:12:12 spark kernel: {MSG}",
            "spark",
            datetime(2026, 11, 14, 13, 12, 12, tzinfo=timezone.utc),
            None,
        ),
    ],
)
def test_each_prefix_yields_the_kernel_message(
    line: str, host: str | None, wall: datetime | None, uptime: float | None
) -> None:
    message, ident, got_host, got_wall, got_uptime = split_one(line)
    assert message == MSG
    assert ident in ("kernel", None)
    assert got_host == host
    assert got_wall == wall
    assert got_uptime == uptime


def test_userspace_syslog_lines_keep_their_identifier() -> None:
    message, ident, host, _, _ = split_one("Jan  5 15:19:01 host CRON[14500]: (root) CMD (touch x)")
    assert (message, ident, host) == ("(root) CMD (touch x)", "CRON", "host")


def test_rsyslog_hash012_joins_are_split() -> None:
    splitter = LineSplitter("t", zone=UTC, year=2026)
    records = splitter.split("Jan  5 15:19:27 h kernel: active_anon:1 inactive_anon:2#012 active_file:3", 1)
    assert [r.message for r in records] == ["active_anon:1 inactive_anon:2", " active_file:3"]
    assert all(r.stamp.wall is not None for r in records)


def test_continuation_lines_inherit_the_stamp() -> None:
    splitter = LineSplitter("t", zone=UTC, year=2026)
    first = splitter.split("Nov 14 13:12:12 spark kernel: active_anon:1", 1)[0]
    second = splitter.split("                                 active_file:3", 2)[0]
    assert second.stamp == first.stamp
    assert second.message.strip() == "active_file:3"


def test_journal_json_lines() -> None:
    entry = {
        "MESSAGE": MSG,
        "_TRANSPORT": "kernel",
        "__REALTIME_TIMESTAMP": "1794661932000000",
        "_SOURCE_MONOTONIC_TIMESTAMP": "5864708440",
        "_BOOT_ID": "b1",
        "_HOSTNAME": "spark",
    }
    message, ident, host, wall, uptime = split_one(json.dumps(entry))
    assert (message, ident, host, uptime) == (MSG, "kernel", "spark", 5864.70844)
    assert wall == datetime.fromtimestamp(1794661932, timezone.utc)


def test_journal_json_byte_array_message() -> None:
    entry = {"MESSAGE": list(MSG.encode()), "_TRANSPORT": "kernel"}
    assert split_one(json.dumps(entry))[0] == MSG


def test_syslog_year_comes_from_the_reference_and_rolls_back_over_new_year() -> None:
    reference = datetime(2027, 1, 2, tzinfo=timezone.utc)
    splitter = LineSplitter("t", zone=UTC, reference=reference)
    december = splitter.split("Dec 31 23:59:59 h kernel: x", 1)[0]
    january = splitter.split("Jan  1 00:00:01 h kernel: x", 2)[0]
    assert december.stamp.wall is not None and december.stamp.wall.year == 2026
    assert january.stamp.wall is not None and january.stamp.wall.year == 2027


def test_uptime_going_backwards_starts_a_new_boot() -> None:
    splitter = LineSplitter("t", zone=UTC)
    boots = [
        splitter.split(f"[{t}] x", i)[0].stamp.boot for i, t in enumerate(["100.0", "200.0", "1.5", "2.0"])
    ]
    assert boots == [0, 0, 1, 1]


def test_zone_less_stamps_take_the_given_zone() -> None:
    berlin = tz.gettz("Europe/Berlin")
    splitter = LineSplitter("t", zone=berlin, year=2026)  # type: ignore[arg-type]
    record = splitter.split("Nov 14 13:12:12 spark kernel: x", 1)[0]
    assert record.stamp.wall is not None
    assert record.stamp.wall.utcoffset().total_seconds() == 3600  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("name", "number"), [("Jan", 1), ("mär", 3), ("Mai", 5), ("okt.", 10), ("Dez", 12), ("xyz", None)]
)
def test_month_names(name: str, number: int | None) -> None:
    assert month_number(name) == number


def test_rollback_undoes_lines_read_ahead() -> None:
    # The big-file reader reads a few lines ahead to decide whether to count Xid repeats, and
    # undoes them when it reads the lines one by one instead.
    splitter = LineSplitter("k", zone=UTC)
    splitter.split("[  500.000000] first", 1)
    learnt = splitter._same
    state = splitter.checkpoint()
    assert splitter.split("[   10.000000] after a reboot", 2)[0].stamp.boot == 1
    splitter.rollback(state)
    assert learnt is not None and splitter._same == learnt  # the prefix learnt comes back too
    assert splitter.split("[  600.000000] same boot", 2)[0].stamp.boot == 0
    assert splitter.split("continuation", 3)[0].stamp.uptime == 600.0


class _LongWay(LineSplitter):
    """A splitter that never learns a report's prefix: every line read by the full grammar."""

    def _learn_same(self, line: str, split: object) -> None:
        pass


# Lines of one report behind one `[ uptime] ` prefix, with every thing that makes a line more
# than its prefix and message: each must read alike cut at the learnt prefix or read in full.
# Each follows a plain line, after which the prefix is learnt again.
_STAMP = "[  167.460819] "
_TRICKY = [
    f"{_STAMP}lowmem_reserve[]: 0 0 120128 120128",
    f"{_STAMP}[   1204]     0  1204     1450      820      180      640         0  45056  0  0 nvidia-persiste",
    f"{_STAMP}gpu1 kernel: Out of memory: Killed process 7 (x) total-vm:1kB",
    f"{_STAMP}gpu1 kernel: no known message after the tag",
    f"{_STAMP}foo[123]: bar",
    f"{_STAMP}gpu1 foo[123]: bar",
    f"{_STAMP}order=0[  167.460820] Out of memory: Killed process 8 (y) total-vm:1kB",
    f"{_STAMP}order=0<4>[  167.460821] Out of memory: Killed process 9 (z) total-vm:1kB",
    f"{_STAMP}order=0 [  167.460822] not glued: a space before the stamp",
    f"{_STAMP}order=0[  167.460823] no known message after the glue",
    f"{_STAMP}ll\\ama\\-srv oom\\_kill",
    f"{_STAMP}gfp_mask=3D0x200da",
    f"{_STAMP}**Out of memory: Killed process 10 (w) total-vm:1kB**",
    f"{_STAMP}code`",
    f"{_STAMP}comm=\u00dcberprozess",
    f"{_STAMP}zero\u200bwidth",
    "[\u2003 167.460819] an em space in the stamp",
    f"{_STAMP}first#012second",
    f"{_STAMP}a long line " + "x" * 150 + f"   {_STAMP}Out of memory: Killed process 11 (v) total-vm:1kB",
    f"{_STAMP}a long line " + "x" * 150 + f"   {_STAMP}no known message after the join",
    f"{_STAMP}a long line " + "x" * 150 + f"  {_STAMP}Out of memory: Killed process 21 (r) total-vm:1kB",
    f"{_STAMP}",
    "",
    f"{_STAMP}pod/x Out of memory: Killed process 12 (u) total-vm:1kB",
    "[  167.460830] Node 0 Normal free:351204kB",
    f"{_STAMP}Out of memory: Killed process 13 (t) total-vm:1kB",
]
# The same in `journalctl -k` text and rsyslog's kern.log (their prefix `_SYSLOG` in place of
# `_STAMP`, or before it), with what makes a syslog line more than its prefix and message.
_SYSLOG = "Nov 28 08:01:40 gb10 kernel: "
_KILL = "Out of memory: Killed process 20 (s) total-vm:1kB"
_SYSLOG_TRICKY = [
    f"{_SYSLOG}kernel: {_KILL}",
    f"{_SYSLOG}kernel: no known message after the second tag",
    f"{_SYSLOG}kernel: [  167.460819] {_KILL}",
    f"{_SYSLOG}[  167.460819] an uptime after the tag: kern.log's",
    f"{_SYSLOG} [  167.460819] {_KILL}",
    f"{_SYSLOG}Mem-Info:Nov 28 08:01:40 gb10 kernel: {_KILL}",
    f"{_SYSLOG}Mem-Info: Nov 28 08:01:40 gb10 kernel: no known message after the second prefix",
    f"{_SYSLOG}says kernel: twice",
    f"{_SYSLOG}a long line " + "x" * 150 + f"   {_SYSLOG}{_KILL}",
    f"{_SYSLOG}first#012second#011tabbed",
    f"{_SYSLOG}pod/x {_KILL}",
    f"{_SYSLOG}",
    "Nov 28 08:01:40 gb11 kernel: another host",
    "Nov 28 08:01:40 gb10 systemd[1]: session-1.scope: A process of this unit has been killed by the OOM killer.",
    "Nov 28 08:01:40 gb10 kernel[12]: a pid after the tag",
    "Nov 28 08:01:40 kernel: no host",
    "Nov 28 08:01:40 gb10 kernel:no space after the tag",
    "Nov 28 08:01:40 gb10 kernel:  two spaces after the tag",
    "Nov 28 08:01:40 gb10 kernel:\ta tab after the tag",
    "Nov 28 08:01:40 gb10 INFO kernel: a severity",
    "Nov 28 08:01:40 gb10 <kern.warning> kernel: a facility",
    "Nov 28 08:01:40.250000 gb10 kernel: a fraction of a second",
    "Nov 28 08:01:41 gb10 kernel: the next second",
    "Nov 28 08:01:61 gb10 kernel: no such second",
    "Nov 28 24:00:00 gb10 kernel: no such hour",
    "Nov 28 08:01:4x gb10 kernel: no time",
    "Nov 29 08:01:40 gb10 kernel: the next day",
    "Nov  8 08:01:40 gb10 kernel: a day of one digit",
    "Feb 30 08:01:40 gb10 kernel: no such day",
    "Dec 31 23:59:59 gb10 kernel: the year before the reference's",
    "Jan  1 00:00:01 gb10 kernel: the reference's year",
    "> Nov 28 08:01:40 gb10 kernel: quoted",
    "                             a continuation, indented as journalctl does",
    "a continuation, bare as rsyslog leaves it",
]


def _report(prefix: str, syslog: bool) -> list[str]:
    """The report's lines each after a plain one (after which the prefix is learnt again), with
    `prefix` for `_STAMP` at their start."""
    tricky = [prefix + line[len(_STAMP) :] if line.startswith(_STAMP) else line for line in _TRICKY]
    if syslog:
        tricky += [
            prefix + line[len(_SYSLOG) :] if line.startswith(_SYSLOG) else line for line in _SYSLOG_TRICKY
        ]
    return [
        f"{prefix}llama-server invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE), order=0",
        *(line for each in tricky for line in (f"{prefix}Mem-Info:", each)),
        f"{prefix}Mem-Info:",
    ]


_PREFIXES = {"dmesg": _STAMP, "journalctl": _SYSLOG, "kern.log": _SYSLOG + _STAMP}
_REPORTS = {shape: _report(prefix, syslog=shape != "dmesg") for shape, prefix in _PREFIXES.items()}


def _own_stamps(lines: list[str], shape: str) -> list[str]:
    """The report as a real kernel prints it: each line stamped a little after the one before,
    the stamp's width changing, an uptime going back (a new boot), three decimals, no space;
    the syslog stamp's second changing every few lines."""
    uptimes = ["[  167.{:06d}] ", "[ 1167.{:06d}] ", "[167.{:06d}] ", "[    0.{:06d}] ", "[  167.{:03d}] "]
    prefix = _PREFIXES[shape]
    own = []
    for number, line in enumerate(lines):
        if line.startswith(prefix):
            uptime = uptimes[number // 9 % len(uptimes)].format(number)
            syslog = f"Nov 28 08:01:{40 + number // 7 % 20} gb10 kernel: "
            own_prefix = {"dmesg": uptime, "journalctl": syslog, "kern.log": syslog + uptime}[shape]
            line = own_prefix + line[len(prefix) :]
        own.append(line)
    own.append(f"{prefix.removesuffix(_STAMP)}[  168.000001]no space after the stamp")
    own.append(f"{prefix}Mem-Info:")
    return own


def _each_line(splitter: LineSplitter, lines: list[str]) -> list[Record]:
    return [record for number, line in enumerate(lines, 1) for record in splitter.split(line, number)]


def _splitter(kind: type[LineSplitter] = LineSplitter) -> LineSplitter:
    # The reference puts December's lines in the year before January's.
    return kind("k", zone=UTC, reference=datetime(2027, 1, 1, 12, tzinfo=timezone.utc))


@pytest.mark.parametrize("shape", ["dmesg", "journalctl", "kern.log"])
@pytest.mark.parametrize("stamps", ["shared", "own"])
@pytest.mark.parametrize("ending", ["", "\r"])
def test_a_learnt_prefix_and_a_block_read_as_every_line_read_in_full(
    ending: str, stamps: str, shape: str
) -> None:
    report = _REPORTS[shape] if stamps == "shared" else _own_stamps(_REPORTS[shape], shape)
    lines = [line + ending for line in report]
    long_way = _splitter(_LongWay)
    full = _each_line(long_way, lines)
    line_by_line = _splitter()
    one_by_one = _each_line(line_by_line, lines)
    assert line_by_line.read_state() == long_way.read_state()
    splitter = _splitter()
    block = splitter.split(lines[0], 1) + splitter.split_block("\n".join(lines[1:]), 2)
    assert splitter._same is not None  # the prefix was learnt, and kept to the end
    assert splitter._same == line_by_line._same  # as the line after would read it
    assert splitter.read_state() == long_way.read_state()
    assert one_by_one == full
    assert block == full
    assert [r.message for r in full][1:3] == ["Mem-Info:", "lowmem_reserve[]: 0 0 120128 120128"]
    assert [r.host for r in full if "Killed process 7" in r.message] == [
        "gpu1" if shape == "dmesg" else "gb10"
    ]
    assert [r.message for r in full if "Killed process 8" in r.message] == [
        "Out of memory: Killed process 8 (y) total-vm:1kB"
    ]
    assert [r.message for r in full if "Killed process 21" in r.message] == [
        "Out of memory: Killed process 21 (r) total-vm:1kB"
    ]
    joined = [
        r for r in full if r.message == "a long line " + "x" * 150
    ]  # cut where a stamp follows 2+ spaces
    assert len(joined) == (3 if shape == "dmesg" else 4)
    if shape != "dmesg":
        kills = [(r.message, r.host) for r in full if "Killed process 20" in r.message]
        assert kills == [(_KILL, "gb10")] * 6
        years = {r.message: r.stamp.wall.year for r in full if r.stamp.wall and "year" in r.message}
        assert list(years.values()) == [2026, 2027]


@pytest.mark.parametrize(
    "decorated",
    [
        "Nov Out of memory: Killed process 7 (x) total-vm:1kB",  # `Nov ` cut off the lines after
        "Feb 30 08:01:40 gb10 kernel: [  167.460819] no such day: all before the uptime is cut",
    ],
)
def test_a_prefix_is_not_learnt_behind_a_decoration(decorated: str) -> None:
    prefixes = (_SYSLOG, "Feb 30 08:01:40 gb10 kernel: [  167.460819] ", _SYSLOG + _STAMP)
    lines = [decorated] + [f"{prefix}{message}" for prefix in prefixes for message in ("Mem-Info:", "x", "y")]
    long_way = _splitter(_LongWay)
    full = _each_line(long_way, lines)
    splitter = _splitter()
    assert _each_line(splitter, lines) == full


@pytest.mark.parametrize("uptime", ["", _STAMP])
def test_a_syslog_clock_across_a_change_of_daylight_saving_time_reads_as_in_full(uptime: str) -> None:
    # A learnt prefix's line of another time of day: its offset is the zone's at that time.
    clocks = ["01:59:59", "03:00:00", "02:30:00", "01:59:58", "23:00:00"]
    lines = [
        f"{day} {clock} gb10 kernel: {uptime}Mem-Info:" for day in ("Mar 29", "Oct 25") for clock in clocks
    ]
    berlin = tz.gettz("Europe/Berlin")
    long_way = _LongWay("k", zone=berlin, year=2026)  # type: ignore[arg-type]
    splitter = LineSplitter("k", zone=berlin, year=2026)  # type: ignore[arg-type]
    full = _each_line(long_way, lines)
    assert _each_line(splitter, lines) == full
    assert len({r.stamp.wall.utcoffset() for r in full if r.stamp.wall}) == 2


@pytest.mark.parametrize("shape", ["journalctl", "kern.log"])
def test_a_syslog_report_line_is_cut_with_a_slice(shape: str) -> None:
    # Not only the same answers: after a line read in full, the next of its prefix is cut with a
    # slice, and so is one of the next second (in kern.log, also one with its own uptime).
    splitter = _splitter()
    splitter.split(f"{_PREFIXES[shape]}Mem-Info:", 1)
    assert splitter._same is not None and splitter._same.host == "gb10"
    assert splitter._learnt(f"{_PREFIXES[shape]}Node 0 active_anon:1") is not None
    own_uptime = splitter._learnt(f"{_SYSLOG}[  167.5] Node 0 active_anon:1")
    assert (own_uptime is not None) == (shape == "kern.log")
    next_second = _PREFIXES[shape].replace("08:01:40", "08:01:41")
    assert splitter._learnt(f"{next_second}Node 0 active_anon:1") is not None


_PIECES = st.sampled_from(
    [
        "x",
        " ",
        "  ",
        "[",
        "]",
        "0",
        "1.5",
        "167.460820",
        "<4>",
        ">",
        ":",
        "kernel:",
        "gpu1 ",
        "foo[12]: ",
        "Out of memory: Killed process 7 (x) total-vm:1kB",
        "Mem-Info:",
        "#012",
        "\\",
        "`",
        "*",
        "=3D",
        "\u00dc",
        "\u200b",
        "\u2003",
        "pod/x ",
        "order=0",
        "y" * 90,
        "kernel: ",
        " kernel: ",
        "Nov 28 08:01:40 gb10 kernel: ",
        "[ 5.1] ",
        "\t",
    ]
)
_STAMPS = st.sampled_from(
    [
        "[  167.{:06d}] ",
        "[{:d}.5] ",
        "[ 1167.{:06d}]",
        "[    0.{:06d}] ",
        "[  {:d}.000000]  ",
        "[\u2003 {:d}.5] ",
        # journalctl -k, rsyslog's kern.log, another host, another tag, a continuation
        "Nov 28 08:01:40 gb10 kernel: ",
        "Nov 28 08:01:41 gb10 kernel: ",
        "Nov 28 08:01:40 gb10 kernel: [  167.{:06d}] ",
        "Nov 28 08:01:41 gb10 kernel: [    0.{:06d}] ",
        "Nov 28 23:59:59 gb10 kernel: ",
        "Nov 28 23:59:60 gb10 kernel: [  167.{:06d}] ",
        "Nov 29 00:00:00 gb10 kernel: [  167.{:06d}] ",
        "Nov 28 08:01:40 gb11 kernel: [ 1167.{:06d}] ",
        "Nov  8 08:01:40 gb10 kernel:",
        "Dec 31 23:59:59 gb10 kernel: [  {:d}.000000] ",
        "Jan  1 00:00:00 gb10 kernel: ",
        "Nov 28 08:01:40 gb10 systemd[1]: ",
        "    ",
    ]
)


@settings(max_examples=600, deadline=None)
@given(
    st.lists(
        st.tuples(_STAMPS, st.integers(0, 999_999), st.lists(_PIECES, max_size=6), st.booleans()),
        min_size=1,
        max_size=12,
    )
)
def test_lines_of_their_own_stamps_read_as_the_full_grammar_reads_them(lines: list) -> None:
    # After a plain line the prefix is learnt; whatever follows, a line with its own stamp (an
    # uptime, a syslog stamp and host, both) must read as the full grammar (which never learns a
    # prefix) reads it, and leave the same state.
    text = ["[  100.000000] Mem-Info:"]
    for shape, n, pieces, after_plain in lines:
        if after_plain:
            text.append(shape.format(n + 1) + "Mem-Info:")
        text.append(shape.format(n) + "".join(pieces))
    long_way = _splitter(_LongWay)
    full = _each_line(long_way, text)
    line_by_line = _splitter()
    assert _each_line(line_by_line, text) == full
    assert line_by_line.read_state() == long_way.read_state()
    splitter = _splitter()
    assert splitter.split(text[0], 1) + splitter.split_block("\n".join(text[1:]), 2) == full
    assert splitter.read_state() == long_way.read_state()
    assert splitter._same == line_by_line._same  # the prefix learnt, as the line after reads it


def test_a_stamp_read_by_dateutil_never_takes_the_date_of_the_run() -> None:
    """dateutil fills what a stamp lacks from today: `[2025-09-13T20:46:45.25Z]` (a Talos node's
    prefix, tests/realworld's dev-talos-rpi5-node-prefix) was dated the day oomtrace ran, a
    `Jun 12 06:39:26:` stamp took the year of the run, and `29 01:00:04` (a quote that cut the
    month off) this month. The date glued by a T is read; a missing year is inferred as
    syslog's is (--year, else the file's time); a missing month leaves no date at all."""
    from datetime import UTC, datetime

    splitter = LineSplitter("x.log", zone=UTC, year=2019)
    (talos,) = splitter.split("mc-pt1: kern: warning: [2025-09-13T20:46:45.253118849Z]: Mem-Info:", 1)
    assert talos.stamp.wall == datetime(2025, 9, 13, 20, 46, 45, 253118, tzinfo=UTC)
    (june,) = splitter.split("xx Jun 12 06:39:26: earlyoom: sending SIGTERM to process 1", 2)
    assert june.stamp.wall is not None and june.stamp.wall.year == 2019
    (cut,) = LineSplitter("x.log", zone=UTC).split('"29 01:00:04 localhost kernel: Killed process 1 (x)', 3)
    assert cut.stamp.wall is None and cut.stamp.clock == 3604.0  # a time of day, no date


@pytest.mark.parametrize("junk", ["\0" * 40, "\0", "xyz", "\udcff\udcfe", "\x7f\x01"])
@pytest.mark.parametrize("uptime", ["", "[  152.701942] "])
def test_bytes_glued_before_a_syslog_line_do_not_take_its_stamp_or_host(junk: str, uptime: str) -> None:
    """Issue 41: a NUL run (an unclean shutdown's, in kern.log) or any bytes glued before a
    syslog line. Its stamp is the syslog one after them: not the uptime further in, not a date
    read by guess in this month, and the host is kept."""
    line = f"{junk}May 15 23:01:53 host1 kernel: {uptime}{MSG}"
    message, ident, host, wall, _ = split_one(line)
    assert (message, ident, host) == (MSG, "kernel", "host1")
    assert wall == datetime(2026, 5, 15, 23, 1, 53, tzinfo=timezone.utc)


REALWORLD = __import__("pathlib").Path(__file__).parent / "realworld" / "cases"


def test_a_nul_run_before_a_syslog_kill_makes_no_second_incident(tmp_path: object) -> None:
    """The reproduction: four kills of one shortage (forum-docker-resolved-paren-names), an
    unclean shutdown's NUL run glued before the first kill line. Before, that kill lost its host
    and its syslog stamp and was counted an incident of its own."""
    from tests.conftest import run

    case = REALWORLD / "forum-docker-resolved-paren-names" / "input.txt"
    lines = case.read_bytes().split(b"\n")
    first = next(n for n, line in enumerate(lines) if b"Killed process" in line)
    lines[first] = b"\0" * 512 + lines[first]
    damaged = tmp_path / "kern.log"  # type: ignore[operator]
    damaged.write_bytes(b"\n".join(lines))
    documents = [
        json.loads(
            run("list", "--all", "-k", str(path), "--tz", "UTC", "--year", "2026", "-f", "json").stdout
        )
        for path in (case, damaged)
    ]
    clean, read = ([(e["host"], e["time"], e["victim"]["pid"]) for e in d["episodes"]] for d in documents)
    assert read == clean and len(read) == 4
    assert len(documents[1]["incidents"]) == len(documents[0]["incidents"]) == 1
