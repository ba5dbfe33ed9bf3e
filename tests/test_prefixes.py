"""The line-prefix grammar: every shape a kernel line arrives in."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from dateutil import tz
from hypothesis import given, settings
from hypothesis import strategies as st

from oomtrace.prefixes import LineSplitter, month_number

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
    state = splitter.checkpoint()
    assert splitter.split("[   10.000000] after a reboot", 2)[0].stamp.boot == 1
    splitter.rollback(state)
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
    f"{_STAMP}",
    "",
    f"{_STAMP}pod/x Out of memory: Killed process 12 (u) total-vm:1kB",
    "[  167.460830] Node 0 Normal free:351204kB",
    f"{_STAMP}Out of memory: Killed process 13 (t) total-vm:1kB",
]
_REPORT_LINES = [
    f"{_STAMP}llama-server invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE), order=0",
    *(line for tricky in _TRICKY for line in (f"{_STAMP}Mem-Info:", tricky)),
]


def _own_stamps(lines: list[str]) -> list[str]:
    """The report as a real kernel prints it: each line stamped a little after the one before,
    the stamp's width changing, an uptime going back (a new boot), three decimals, no space."""
    shapes = ["[  167.{:06d}] ", "[ 1167.{:06d}] ", "[167.{:06d}] ", "[    0.{:06d}] ", "[  167.{:03d}] "]
    own = []
    for number, line in enumerate(lines):
        if line.startswith(_STAMP):
            shape = shapes[number // 9 % len(shapes)]
            line = shape.format(number) + line[len(_STAMP) :]
        own.append(line)
    own.append("[  168.000001]no space after the stamp")
    own.append("[  168.000002] Mem-Info:")
    return own


@pytest.mark.parametrize("stamps", ["shared", "own"])
@pytest.mark.parametrize("ending", ["", "\r"])
def test_a_learnt_prefix_and_a_block_read_as_every_line_read_in_full(ending: str, stamps: str) -> None:
    report = _REPORT_LINES if stamps == "shared" else _own_stamps(_REPORT_LINES)
    lines = [line + ending for line in report]
    long_way = _LongWay("k", zone=UTC)
    full = [r for n, line in enumerate(lines, 1) for r in long_way.split(line, n)]
    splitter = LineSplitter("k", zone=UTC)
    one_by_one = [r for n, line in enumerate(lines, 1) for r in splitter.split(line, n)]
    splitter = LineSplitter("k", zone=UTC)
    block = splitter.split(lines[0], 1) + splitter.split_block("\n".join(lines[1:]), 2)
    assert splitter._same is not None  # the prefix was learnt, and kept to the end
    assert one_by_one == full
    assert block == full
    assert [r.message for r in full][1:3] == ["Mem-Info:", "lowmem_reserve[]: 0 0 120128 120128"]
    assert [r.host for r in full if "Killed process 7" in r.message] == ["gpu1"]
    assert [r.message for r in full if "Killed process 8" in r.message] == [
        "Out of memory: Killed process 8 (y) total-vm:1kB"
    ]


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
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(_STAMPS, st.integers(0, 999_999), st.lists(_PIECES, max_size=6)), min_size=1, max_size=12
    )
)
def test_lines_of_their_own_stamps_read_as_the_full_grammar_reads_them(lines: list) -> None:
    # After one plain line the prefix is learnt; whatever follows, a line with its own `[ uptime] `
    # must read as the full grammar (which never learns a prefix) reads it.
    text = ["[  100.000000] Mem-Info:"] + [shape.format(n) + "".join(pieces) for shape, n, pieces in lines]
    long_way = _LongWay("k", zone=UTC)
    full = [r for n, line in enumerate(text, 1) for r in long_way.split(line, n)]
    splitter = LineSplitter("k", zone=UTC)
    assert [r for n, line in enumerate(text, 1) for r in splitter.split(line, n)] == full
    splitter = LineSplitter("k", zone=UTC)
    assert splitter.split(text[0], 1) + splitter.split_block("\n".join(text[1:]), 2) == full
