"""`oomtrace watch`, its state driven directly: a real incident's lines in, notices out.

The live parts (a real /dev/kmsg, a journal being appended, a real OOM kill, PSI) are in
tests/test_watch_live.py.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dateutil import tz

from oomtrace.prefixes import LineSplitter
from oomtrace.records import Record
from oomtrace.watch.follow import Batch, _unescape
from oomtrace.watch.notice import EVENTS, Notice
from oomtrace.watch.probes import Memory, Pressure, read_pressure
from oomtrace.watch.thresholds import Thresholds, parse_warn
from oomtrace.watch.watcher import Sample, Watcher
from tests.conftest import FIXTURES, run

SEED000 = FIXTURES / "seed000_llama_server_gb10" / "kernel.log"


def _records(log: Path) -> list[Record]:
    splitter = LineSplitter(str(log), zone=tz.UTC, year=2026)
    return [r for n, line in enumerate(log.read_text().splitlines(), 1) for r in splitter.split(line, n)]


def _replay(records: list[Record], thresholds: Thresholds | None = None) -> list[Notice]:
    """The records fed one at a time, as a follower would, each at its own time."""
    said: list[Notice] = []
    watcher = Watcher(thresholds or Thresholds(), UTC, str(SEED000), said.append, "boot-1")
    last = None
    for record in records:
        wall = record.stamp.wall or last
        if wall is None:
            continue  # the journal's "-- Boot --" line, before any stamp
        last = wall
        watcher.feed(Batch((record,), None), wall.timestamp(), wall)
        watcher.tick(wall.timestamp(), wall)
    assert last is not None
    watcher.tick(last.timestamp() + 1, last + timedelta(seconds=1))
    return said


def test_seed000_warns_minutes_before_the_kill_and_tells_the_story_as_why_does() -> None:
    said = _replay(_records(SEED000))
    events = [(n.event, n.kind) for n in said]
    # The two NV_ERR_NO_MEMORY lines 6 s apart are one warning (the second is counted), then the kill.
    assert events == [("warning", "nvrm-no-memory"), ("kill", "kernel-oom")], events
    assert all(n.event in EVENTS for n in said)
    warning, kill = said
    assert "NV_ERR_NO_MEMORY" in warning.text and warning.meaning
    assert warning.time == datetime(2026, 11, 14, 13, 8, 59, tzinfo=UTC)
    assert kill.data["lead_time_s"] == pytest.approx(193, abs=1)
    why = json.loads(
        run("why", "llama-server", "-k", str(SEED000), "--tz", "UTC", "--year", "2026", "-f", "json").stdout
    )
    story = kill.data["story"]
    assert story["episode"]["victim"] == why["episode"]["victim"]
    assert story["earliest_warning"]["text"] == why["earliest_warning"]["text"]
    assert story["lead_time_s"] == why["lead_time_s"]
    # Its JSON line is what --format jsonl writes and --exec gets.
    document = kill.to_json()
    assert document["schema"] == "oomtrace/1" and document["event"] == "kill"
    assert any("Killed process 1966928" in line["message"] for line in document["lines"])
    json.dumps(document)


def test_a_kill_read_again_is_not_told_again() -> None:
    records = _records(SEED000)
    said = _replay(records + records)
    assert [n.event for n in said].count("kill") == 1


def test_a_warning_repeats_at_most_once_a_minute_and_clears_when_it_stops() -> None:
    (line,) = [r for r in _records(SEED000) if "NV_ERR_NO_MEMORY" in r.message][:1]
    said: list[Notice] = []
    watcher = Watcher(Thresholds(), UTC, "kmsg", said.append)
    start = datetime(2026, 11, 14, 13, 0, tzinfo=UTC)
    for second in range(0, 90, 3):  # every 3 s for 90 s
        wall = start + timedelta(seconds=second)
        watcher.feed(Batch((line,), None), float(second), wall)
    assert [n.event for n in said] == ["warning", "warning"]
    assert "19 more since it was last said" in said[1].text
    watcher.tick(87 + 601, start + timedelta(seconds=688))
    assert said[-1].event == "clear" and "seen 30 time(s)" in said[-1].text


def test_sampled_pressure_warns_past_its_threshold_and_clears_below_it() -> None:
    said: list[Notice] = []
    watcher = Watcher(
        parse_warn("psi-some=10,psi-full=off,memavail=off,zero-in=off"), UTC, "kmsg", said.append
    )
    wall = datetime(2026, 11, 14, 13, 0, tzinfo=UTC)
    for now, some in enumerate([0.5, 12.0, 30.0, 9.0, 7.5]):
        watcher.sample(Sample(float(now), wall + timedelta(seconds=now), Pressure(some, 0.0), None))
    events = [(n.event, n.kind) for n in said if n.event != "sample"]
    # 9.0 is under 10 but within the 20 % margin: still warning; 7.5 clears.
    assert events == [("warning", "psi-some"), ("clear", "psi-some")]
    assert said[0].data == {"value": 12.0, "limit": 10.0}


def test_memavailable_falling_fast_warns_before_it_is_low() -> None:
    said: list[Notice] = []
    watcher = Watcher(parse_warn("memavail=5%,zero-in=30s"), UTC, "kmsg", said.append)
    wall = datetime(2026, 11, 14, 13, 0, tzinfo=UTC)
    gib = 1024 * 1024
    # 120 GiB of RAM, 60 GiB available, falling 10 GiB a second (a unified-memory GPU loading a model).
    for second in range(4):
        memory = Memory(120 * gib, (60 - 10 * second) * gib)
        watcher.sample(Sample(float(second), wall + timedelta(seconds=second), None, memory))
    kinds = [n.kind for n in said if n.event == "warning"]
    assert kinds == ["zero-in"], kinds
    # Said at the second sample, with 50 GiB still available: five seconds before it would be gone.
    assert "50.0 GiB, falling 10.0 GiB/s: zero in 5s" in said[0].text


def test_the_watchers_own_warning_is_in_the_kill_story(tmp_path: Path) -> None:
    """A PSI warning the watcher sampled comes first in the story of the kill that follows."""
    said: list[Notice] = []
    watcher = Watcher(parse_warn("psi-some=10"), UTC, str(SEED000), said.append, "boot-1")
    records = _records(SEED000)
    kill_time = datetime(2026, 11, 14, 13, 12, 12, tzinfo=UTC)
    early = kill_time - timedelta(minutes=5)
    watcher.sample(Sample(0.0, early, Pressure(42.0, 3.0), None))
    for record in records:
        wall = record.stamp.wall or kill_time
        watcher.feed(Batch((record,), None), wall.timestamp(), wall)
    watcher.tick(kill_time.timestamp() + 5, kill_time + timedelta(seconds=5))
    (kill,) = [n for n in said if n.event == "kill"]
    assert kill.data["story"]["earliest_warning"]["kind"] == "watch-warning"
    assert kill.data["lead_time_s"] == pytest.approx(300, abs=1)
    # And the record of it, read back by `why --record`, tells the same.
    record = tmp_path / "record.jsonl"
    record.write_text("".join(json.dumps(n.to_json()) + "\n" for n in said))
    why = run(
        "why",
        "llama-server",
        "--record",
        str(record),
        "-k",
        str(SEED000),
        "--tz",
        "UTC",
        "--year",
        "2026",
        "-f",
        "json",
    )
    assert why.exit_code == 0, why.output
    document = json.loads(why.stdout)
    assert document["earliest_warning"]["kind"] == "watch-warning"
    assert document["source"]["kills_read_twice"] == 1


def test_kmsg_escapes_are_undone() -> None:
    assert _unescape(b"a\\x5cb\\x0ac") == "a\\b\nc"
    assert _unescape(b"no escapes") == "no escapes"
    # Issue 26: kmsg escapes each byte of UTF-8; decoded byte by byte, caf\xc3\xa9 was "cafÃ©".
    assert _unescape(b"Killed process 4242 (caf\\xc3\\xa9-srv)") == "Killed process 4242 (café-srv)"
    assert "Ã" not in _unescape(b"caf\\xc3\\xa9")
    # A byte that is not UTF-8 is replaced, not a crash.
    assert _unescape(b"bad \\xff byte") == "bad \ufffd byte"


def test_pressure_file_format(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    path.write_text(
        "some avg10=12.50 avg60=3.00 avg300=1.00 total=123456\nfull avg10=2.25 avg60=0.00 avg300=0.00 total=99\n"
    )
    assert read_pressure(str(path)) == Pressure(12.5, 2.25)
    assert read_pressure(str(tmp_path / "absent")) is None


@pytest.mark.parametrize(
    "spec", ["psi-some=200", "psi-some=abc", "memavail=lots", "bogus=1", "zero-in=soon", "kernel=maybe"]
)
def test_a_bad_warn_spec_is_a_usage_error(spec: str) -> None:
    result = run("watch", "--warn", spec, "--duration", "0")
    assert result.exit_code == 2, result.output
    assert "--warn: cannot read" in result.output and "Traceback" not in result.output


def test_warn_spec_values() -> None:
    limits = parse_warn("psi-some=20,memavail=2G,zero-in=1m,nvrm=off,repeat=30s")
    assert limits.psi_some == 20 and limits.memavail_kb == 2 * 1024 * 1024 and limits.memavail_percent is None
    assert limits.zero_in_s == 60 and not limits.kernel and limits.repeat_s == 30
    assert limits.memavail_floor_kb(100) == 2 * 1024 * 1024
    assert parse_warn("memavail=off").memavail_floor_kb(100) is None


def test_the_service_unit_is_one_systemd_accepts(tmp_path: Path) -> None:
    """contrib/oomtrace-watch.service, with ExecStart pointed at this oomtrace, passes
    `systemd-analyze verify` (unknown keys, bad values and a missing binary all fail it)."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    unit = (FIXTURES.parent / "contrib" / "oomtrace-watch.service").read_text()
    oomtrace = Path(sys.executable).with_name("oomtrace")
    assert "ExecStart=/usr/local/bin/oomtrace watch" in unit
    copy = tmp_path / "oomtrace-watch.service"
    copy.write_text(unit.replace("/usr/local/bin/oomtrace", str(oomtrace)))
    result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True)
    assert result.returncode == 0 and "oomtrace-watch.service" not in result.stderr, result.stderr


def test_a_flood_of_one_warning_cannot_push_the_story_out_of_the_buffer() -> None:
    """100,000 Xid lines between seed 000's NV_ERR_NO_MEMORY and its kill (a driver in a loop):
    the story still has the first warning and counts the flood, and the buffer stays small."""
    records = _records(SEED000)
    xid = next(
        r
        for r in _records(FIXTURES / "seed004_tensorfold_cotenant_gb10" / "kernel.log")
        if "Xid" in r.message
    )
    at = next(i for i, r in enumerate(records) if "invoked oom-killer" in r.message)
    before = records[at - 1].stamp.wall
    assert before is not None
    # The driver's line as seed 004 printed it, said on seed 000's machine.
    stamp = dataclasses.replace(xid.stamp, wall=before)
    line = dataclasses.replace(xid, source=records[at].source, host=records[at].host, stamp=stamp)
    flood = [line] * 100_000
    said = _replay(records[:at] + flood + records[at:])
    (kill,) = [n for n in said if n.event == "kill"]
    story = kill.data["story"]
    assert story["earliest_warning"]["kind"] == "nvrm-no-memory"
    assert kill.data["lead_time_s"] == pytest.approx(193, abs=1)
    warnings = [t["text"] for t in story["timeline"] if t["kind"] == "warning"]
    assert any("Xid" in text and "(×100000," in text for text in warnings), warnings


def test_watching_a_system_journal_that_is_not_there_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from oomtrace.watch import command

    monkeypatch.setattr(command, "system_journal_present", lambda: False)
    result = run("watch", "--source", "journal", "--duration", "0")
    assert result.exit_code == 2 and "no system journal to follow" in result.output
