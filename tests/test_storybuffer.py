"""The watcher's story buffer on its own: what it folds, counts and lets go of."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from oomtrace.parse import parse_record
from oomtrace.records import Record, Stamp
from oomtrace.watch import storybuffer
from oomtrace.watch.storybuffer import Hold, StoryBuffer

START = datetime(2026, 12, 1, tzinfo=UTC)
XID = "NVRM: Xid (PCI:0000:01:00): 31, pid=1234, name=python3, Ch 00000008"


def _record(line_no: int, message: str, at: datetime = START) -> Record:
    return Record("kern.log", line_no, message, message, Stamp(at, None, at.isoformat()))


def test_a_warning_repeated_line_after_line_is_kept_as_two_records() -> None:
    buffer = StoryBuffer()
    records = [_record(n, XID) for n in range(1, 101)]
    kept = [buffer.keep(r, parse_record(r), None) for r in records]
    assert kept[:2] == [True, True] and not any(kept[2:])
    first, last = buffer.records
    assert (first.line_no, last.line_no, last.repeats) == (1, 100, 98)
    assert buffer.appended == 2


def test_a_report_past_its_bound_counts_its_body_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storybuffer, "REPORT_RECORDS_MAX", 3)
    buffer = StoryBuffer()
    for n in range(10):
        buffer.keep(_record(n, f"row {n}"), None, 0, essential=n == 9)
    assert [r.message for r in buffer.records] == ["row 0", "row 1", "row 2", "row 9"]
    assert buffer.body_dropped == 6


def test_the_oldest_go_but_never_a_story_not_yet_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storybuffer, "BUFFER_MAX", 5)
    buffer = StoryBuffer()
    for n in range(10):
        buffer.keep(_record(n, f"line {n}"), None, None)
    buffer.drop_oldest(start=3)
    assert buffer.oldest == 3 and len(buffer.records) == 7
    buffer.drop_oldest(start=None)
    assert [r.line_no for r in buffer.records] == [5, 6, 7, 8, 9]


def test_records_an_hour_older_than_the_newest_are_forgotten_unless_needed() -> None:
    buffer = StoryBuffer()
    for n, minutes in enumerate((0, 10, 80, 90)):
        buffer.keep(_record(n, f"line {n}", START + timedelta(minutes=minutes)), None, None)
    buffer.forget_old(start=1)
    assert [r.line_no for r in buffer.records] == [1, 2, 3]
    buffer.forget_old(start=None)
    assert [r.line_no for r in buffer.records] == [2, 3]


def test_a_story_is_told_without_a_report_begun_since() -> None:
    buffer = StoryBuffer()
    for n in range(6):
        buffer.keep(_record(n, f"line {n}"), None, None)
    assert len(buffer.before(None)) == 6
    assert [r.line_no for r in buffer.before(Hold(None, 0.0, 4))] == [0, 1, 2, 3]
