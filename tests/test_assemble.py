"""The report assembler alone (episodes/assemble.py): which lines make which report, the cascade rule above all."""

from __future__ import annotations

from dateutil import tz

from oomtrace import events as ev
from oomtrace.episodes.assemble import REPORT_LINE_EVENTS, ReportAssembler
from oomtrace.episodes.draft import Draft
from oomtrace.prefixes import LineSplitter
from oomtrace.rejoin import parse_records
from tests.conftest import FIXTURES

RHEL6 = (FIXTURES / "rhel6_2.6.32_messages" / "kernel.log").read_text().splitlines()
MEMCG = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_text().splitlines()
# The next report's header in the RHEL 6 log's own words (a cascade prints it right after a kill).
NEXT_HEADER = "Mar  3 02:14:07 db01 kernel: named invoked oom-killer: gfp_mask=0x201da, order=0, oom_adj=0, oom_score_adj=0"


def drafts(lines: list[str]) -> list[Draft]:
    """Every report the assembler closes from these lines, in order (the builder's routing, bare)."""
    closed: list[Draft] = []
    assembler = ReportAssembler(closed.append)
    assembler.switch((None, "kernel.log"))
    splitter = LineSplitter("kernel.log", zone=tz.UTC, year=2026)
    records = (r for number, line in enumerate(lines, start=1) for r in splitter.split(line, number))
    for seq, (_, event) in enumerate(parse_records(records), start=1):
        if isinstance(event, ev.OomInvoked):
            assembler.header(event, seq)
        elif isinstance(event, ev.Killed):
            assembler.killed(event, seq)
        elif isinstance(event, ev.Reaped):
            assembler.reaped(event, seq)
        elif isinstance(event, (ev.NoKillable, ev.OomPanic)):
            assembler.no_kill(event, seq)
        elif isinstance(event, REPORT_LINE_EVENTS):
            assembler.body(event, seq)
    assembler.finish()
    return closed


def _kill_index(lines: list[str], pid: int) -> int:
    return next(i for i, line in enumerate(lines) if f"Killed process {pid}" in line)


def test_a_whole_report_is_one_draft_from_its_header_to_its_kill() -> None:
    [draft] = drafts(MEMCG)
    assert draft.header is not None and draft.header.comm == "oomprobe-hog"
    assert draft.kill is not None and draft.kill.pid == 2110
    assert draft.events[0] is draft.header
    assert any(isinstance(e, ev.OomKillSummary) for e in draft.events)


def test_a_header_after_a_kill_with_its_report_before_it_opens_the_next_report() -> None:
    """The cascade: a kill whose body came before it (Mem-Info, the tasks table) is complete;
    the header on the next line, at the same second, is the next report's."""
    start = next(i for i, line in enumerate(RHEL6) if line.endswith("kernel: Mem-Info:"))
    kill = _kill_index(RHEL6, 4417)
    first, second = drafts([*RHEL6[start : kill + 1], NEXT_HEADER])
    assert first.header is None and first.kill is not None and first.kill.comm == "java"
    assert second.header is not None and second.header.comm == "named" and second.kill is None
    assert second.events == [second.header]


def test_a_header_quoted_right_after_a_lone_kill_line_is_that_kills_header() -> None:
    """A write-up may quote the kill first and its header next: one report, the header first."""
    [draft] = drafts([RHEL6[_kill_index(RHEL6, 4417)], NEXT_HEADER])
    assert draft.kill is not None and draft.kill.comm == "java"
    assert draft.header is not None and draft.header.comm == "named"
    assert draft.events[0] is draft.header


def test_a_header_with_a_body_of_its_own_is_never_a_lone_kills() -> None:
    start = next(i for i, line in enumerate(RHEL6) if line.endswith("kernel: Mem-Info:"))
    first, second = drafts([RHEL6[_kill_index(RHEL6, 4417)], NEXT_HEADER, RHEL6[start]])
    assert first.header is None and first.kill is not None
    assert second.header is not None and second.kill is None


def test_body_lines_with_no_report_open_join_the_kill_that_follows() -> None:
    """A report cut before its header: the body lines wait, and the first strong line (here
    the tasks table's header) opens a report that takes them."""
    header = next(i for i, line in enumerate(MEMCG) if "invoked oom-killer" in line)
    [draft] = drafts(MEMCG[header + 1 :])
    assert draft.header is None
    assert draft.kill is not None and draft.kill.pid == 2110
    assert isinstance(draft.events[0], ev.TaskLine)  # the CPU line right after the cut header
