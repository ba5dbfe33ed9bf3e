"""`oomtrace watch`, its state driven directly: a real incident's lines in, notices out.

The live parts (a real /dev/kmsg, a journal being appended, a real OOM kill, PSI) are in
tests/test_watch_live.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dateutil import tz

from oomtrace.frozen import replace
from oomtrace.prefixes import LineSplitter
from oomtrace.records import Record
from oomtrace.watch.blackbox import Record as BlackBox
from oomtrace.watch.follow import Batch
from oomtrace.watch.hooks import Hook
from oomtrace.watch.kmsgfollow import _unescape
from oomtrace.watch.notice import EVENTS, Notice
from oomtrace.watch.probes import CGROUP_EVENTS, CgroupCounters, Memory, Pressure, read_pressure
from oomtrace.watch.thresholds import Thresholds, parse_warn
from oomtrace.watch.watcher import FOLD_S, OPEN_REPORT_S, Sample, Watcher
from tests.conftest import FIXTURES, run

SEED000 = FIXTURES / "seed000_llama_server_gb10" / "kernel.log"
LOG_ONLY = "psi-some=off,psi-full=off,memavail=off,zero-in=off"


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


def test_sigusr1s_status_says_how_it_stands_before_during_and_after_a_kill() -> None:
    """What SIGUSR1 prints: nothing pending before the kill's lines, "a kill is being told" while
    it settles, then the kill counted (tests/test_watch_live.py sends the real signal)."""
    records = _records(SEED000)
    kill_line = next(i for i, r in enumerate(records) if "Killed process 1966928" in r.message)
    said: list[Notice] = []
    watcher = Watcher(Thresholds(), UTC, str(SEED000), said.append, "boot-1")
    statuses = []
    last = datetime(2026, 11, 14, 13, 0, tzinfo=UTC)
    for index, record in enumerate(records):
        last = record.stamp.wall or last
        watcher.feed(Batch((record,), None), last.timestamp(), last)
        if index in (0, kill_line - 1, kill_line):
            statuses.append(watcher.status())
    watcher.tick(last.timestamp() + 1, last + timedelta(seconds=1))
    statuses.append(watcher.status())
    assert statuses[0] == "0 kill(s) told since start; warnings active: none"
    assert statuses[1] == "0 kill(s) told since start; warnings active: nvrm-no-memory"
    assert statuses[2] == "0 kill(s) told since start; warnings active: nvrm-no-memory; a kill is being told"
    assert statuses[3] == "1 kill(s) told since start; warnings active: nvrm-no-memory"


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
    stamp = replace(xid.stamp, wall=before)
    line = replace(xid, source=records[at].source, host=records[at].host, stamp=stamp)
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


# ---- issue 26 and issue 23 (4, 8): the watcher's runtime --------------------------------------

SEED000_SCOPE = (
    "/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/"
    "vte-spawn-8c6a1f2e-1d1b-4c5e-9b8e-3f6f2b9f1c11.scope"
)


def _cgroup_sample(now: float, wall: datetime, path: str, counts: dict[str, int]) -> Sample:
    return Sample(now, wall, None, None, (CgroupCounters(path, counts),))


def test_cgroup_counters_that_rise_with_a_kill_are_said_as_that_kill_after_its_story() -> None:
    """Issue 23.4: `cgroup-max +124` and `cgroup-oom_kill` came after the story and read as new
    warnings. Sampled while the kill settles, they wait for it and are marked as the same kill."""
    said: list[Notice] = []
    watcher = Watcher(parse_warn(LOG_ONLY), UTC, str(SEED000), said.append, "boot-1")
    path = "/sys/fs/cgroup" + SEED000_SCOPE.rsplit("/", 1)[0]  # the slice above the victim's scope
    records = _records(SEED000)
    at = next(i for i, r in enumerate(records) if "Killed process 1966928" in r.message)
    wall = records[at].stamp.wall
    assert wall is not None
    watcher.sample(_cgroup_sample(0.0, wall, path, {"max": 10, "oom_kill": 0}))
    for record in records[: at + 1]:
        watcher.feed(Batch((record,), None), 0.1, wall)
    # The next sample comes before the report has settled: the counters rose with the kill.
    watcher.sample(_cgroup_sample(0.2, wall, path, {"max": 134, "oom_kill": 1}))
    assert [n.event for n in said] == ["warning"]  # the NVRM warning; nothing about the cgroup yet
    for record in records[at + 1 :]:
        watcher.feed(Batch((record,), None), 0.25, wall)
    watcher.tick(1.0, wall)
    events = [(n.event, n.kind) for n in said]
    assert events == [
        ("warning", "nvrm-no-memory"),
        ("kill", "kernel-oom"),
        ("warning", "cgroup-max"),
        ("warning", "cgroup-oom_kill"),
    ], events
    for notice in said[2:]:
        assert notice.data["same_kill"] == {"victim": "llama-server", "pid": 1966928}
        assert notice.text.endswith("the kill of llama-server (pid 1966928) told above"), notice.text
        assert not notice.meaning  # the story said what it means
    assert "+124 (now 134)" in said[2].text


def test_a_cgroup_oom_kill_with_no_kill_line_is_said_on_its_own_after_a_wait() -> None:
    said: list[Notice] = []
    watcher = Watcher(parse_warn(LOG_ONLY), UTC, "kmsg", said.append, "boot-1")
    wall = datetime(2026, 11, 14, 13, 0, tzinfo=UTC)
    path = "/sys/fs/cgroup/system.slice/other.service"
    watcher.sample(_cgroup_sample(0.0, wall, path, {"oom_kill": 0, "high": 0}))
    watcher.sample(_cgroup_sample(1.0, wall, path, {"oom_kill": 1, "high": 5}))
    # `high` is a warning at once; oom_kill waits for the kill line the log may still bring.
    assert [n.kind for n in said] == ["cgroup-high"]
    watcher.tick(1.0 + FOLD_S + 0.1, wall)
    assert [n.kind for n in said] == ["cgroup-high", "cgroup-oom_kill"]
    assert "same_kill" not in said[1].data and said[1].meaning == CGROUP_EVENTS["oom_kill"]


def _seed000_batches() -> tuple[list[Batch], int]:
    """Seed 000 one record a batch, each with its cursor (`c<line>`) and the one before it, and
    the kill line's index."""
    records = [r for r in _records(SEED000) if r.stamp.wall]
    befores = [None, *(f"c{r.line_no}" for r in records[:-1])]
    batches = [
        Batch((r,), f"c{r.line_no}", cursors_before=(b,)) for r, b in zip(records, befores, strict=True)
    ]
    kill = next(i for i, b in enumerate(batches) if "Killed process 1966928" in b.records[0].message)
    return batches, kill


def test_the_cursor_does_not_pass_a_kill_before_its_story_is_told() -> None:
    """Issue 26: the cursor was saved past the kill line before the kill was told; a watcher
    killed then never told it. The cursor now stays before the report until the story is out."""
    said: list[Notice] = []
    watcher = Watcher(parse_warn(LOG_ONLY), UTC, str(SEED000), said.append, "boot-1")
    batches, kill = _seed000_batches()
    start = next(i for i, b in enumerate(batches) if "invoked oom-killer" in b.records[0].message)
    before_report = batches[start - 1].cursor
    for batch in batches[: kill + 1]:
        watcher.feed(batch, 0.0, datetime.now(UTC))
    assert watcher.cursor == before_report
    for batch in batches[kill + 1 :]:
        watcher.feed(batch, 0.1, datetime.now(UTC))
        assert watcher.cursor == before_report  # the reaper's line and the rest: still held
    assert not any(n.event == "kill" for n in said)
    watcher.tick(1.0, datetime.now(UTC))
    assert [n.event for n in said][-1] == "kill"
    assert watcher.cursor == batches[-1].cursor  # told: the cursor passes it


def test_a_report_that_never_gets_its_kill_line_stops_holding_the_cursor() -> None:
    said: list[Notice] = []
    watcher = Watcher(parse_warn(LOG_ONLY), UTC, str(SEED000), said.append, "boot-1")
    batches, kill = _seed000_batches()
    start = next(i for i, b in enumerate(batches) if "invoked oom-killer" in b.records[0].message)
    for batch in batches[start:kill]:  # the report, cut before its kill line
        watcher.feed(batch, 0.0, datetime.now(UTC))
    assert watcher.cursor == batches[start - 1].cursor  # held before the report's first line
    watcher.tick(OPEN_REPORT_S + 1, datetime.now(UTC))
    assert watcher.cursor == batches[kill - 1].cursor


def test_a_record_on_a_full_disk_is_said_once_kept_and_never_cut(tmp_path: Path) -> None:
    """Issue 26: --record on a full disk died with `internal error: OSError(28)`. On a tmpfs
    with no room left every write fails: said once, the events kept, the watcher goes on. (A
    /dev/full node is refused at start, as every device is for --record: outputs.py.)"""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    with small_disk(tmp_path, room=0) as disk:
        said: list[str] = []
        record = BlackBox(str(disk / "record.jsonl"), said.append)
        wall = datetime(2026, 11, 14, 13, 0, tzinfo=UTC)
        for second in range(3):
            record.write(Notice("warning", "psi-some", wall, f"pressure {second} " + "x" * 4096))
        record._tried = 0.0  # the retry's clock, run on
        record.retry()
        assert record.behind
        assert len(said) == 1 and "--record" in said[0] and "No space left on device" in said[0], said
        assert (disk / "record.jsonl").read_bytes() == b""
        record.close()
        assert len(said) == 1


@contextlib.contextmanager
def small_disk(tmp_path: Path, room: int) -> Iterator[Path]:
    """A 64 KiB tmpfs in tmp_path (unmounted after, as root), all but about `room` bytes of it
    taken by a file `filler` that a test removes to make room."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        with (disk / "filler").open("wb", buffering=0) as out, contextlib.suppress(OSError):
            out.write(b"x" * (64 * 1024 - room))
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_record_cut_by_a_full_disk_is_taken_back_and_written_when_there_is_room(tmp_path: Path) -> None:
    """A 64 KiB tmpfs, all but 2 KiB taken: the kill's 11 KiB line does not fit. The file keeps
    whole lines only, and once room is made the line waiting is written and that is said."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    with small_disk(tmp_path, room=2048) as disk:
        filler = disk / "filler"
        said: list[str] = []
        path = disk / "record.jsonl"
        record = BlackBox(str(path), said.append)
        wall = datetime(2026, 11, 14, 13, 0, tzinfo=UTC)
        big = Notice("kill", "kernel-oom", wall, "llama-server", lines=({"message": "x" * 11_000},))
        record.write(big)
        assert record.behind and len(said) == 1 and "is failing" in said[0]
        assert path.read_bytes() == b""  # not a cut line
        filler.unlink()
        record._tried = 0.0
        record.retry()
        assert not record.behind and "is written again" in said[-1]
        (line,) = path.read_text().splitlines()
        assert json.loads(line)["event"] == "kill" and json.loads(line)["writer"] == os.getpid()
        record.close()


def test_an_unwritable_cursor_file_is_an_error_at_start(tmp_path: Path) -> None:
    """Issue 26: accepted at start, it crashed at the first record."""
    for path in (tmp_path / "no-such-folder" / "cursor.json", tmp_path):
        result = run("watch", "--cursor-file", str(path), "--source", "kmsg", "--duration", "0")
        assert result.exit_code == 2, result.output
        assert "cannot write --cursor-file" in result.output, result.output
        assert "Traceback" not in result.output and "internal error" not in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert list(tmp_path.iterdir()) == []  # the check left nothing behind


def test_a_hook_flooding_its_stderr_costs_the_watcher_no_memory(tmp_path: Path) -> None:
    """Issue 23.8: a hook writing its stderr without end grew the watcher to 2.4-3.5 GB. 256 MiB
    of it now leaves the watcher's peak memory where it was; the failure keeps both ends."""
    script = tmp_path / "hook.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from datetime import UTC, datetime
            from oomtrace.watch.hooks import Hook
            from oomtrace.watch.notice import Notice
            hook = Hook(sys.argv[1], 60)
            hook.send(Notice("warning", "psi-some", datetime.now(UTC), "pressure"))
            hook.close(60)
            # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent (pytest) through fork.
            print(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")))
            """
        )
    )
    flood = (
        "echo first-words >&2; head -c 268435456 /dev/zero | tr '\\0' x >&2; "
        "echo >&2; echo last-words >&2; exit 3"
    )
    done = subprocess.run([sys.executable, str(script), flood], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    peak_kib = int(done.stdout)
    assert peak_kib < 150 * 1024, f"{peak_kib} KiB"
    assert "Traceback" not in done.stderr
    (failure,) = done.stderr.splitlines()
    assert "--exec failed (exit 3): first-words \u2026 last-words" in failure, failure
    assert "268,435,4" in failure and "first and last 4 KiB kept" in failure, failure


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_for(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    pytest.fail(f"{path} was not written within {timeout} s")


@pytest.mark.parametrize("how", ["watcher stops", "time limit"])
def test_a_hook_and_its_children_are_ended_with_their_group(tmp_path: Path, how: str) -> None:
    """Issue 26: hooks still running when the watcher exited were orphaned. Each runs in its own
    process group, ended (children too) at its time limit and when the watcher stops."""
    pid_file = tmp_path / "pgid"
    hook = Hook(f"echo $$ > {pid_file}; sleep 60 & sleep 60", 60 if how == "watcher stops" else 0.5)
    hook.send(Notice("kill", "kernel-oom", datetime.now(UTC), "llama-server"))
    pgid = int(_wait_for(pid_file))
    assert os.getpgid(pgid) == pgid  # the shell leads a group of its own
    if how == "watcher stops":
        hook.close(wait_s=0.2)
    deadline = time.monotonic() + 10
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(pgid), "the hook's group (its background sleep too) outlived it"
    if how == "time limit":
        hook.close()


def _two_writers_record(tmp_path: Path) -> Path:
    """What two watchers following the same log write to one --record: each event twice,
    interleaved, each line with its writer."""
    said = _replay(_records(SEED000))
    path = tmp_path / "record.jsonl"
    first, second = BlackBox(str(path), print), BlackBox(str(path), print)
    second.writer = first.writer + 1
    started = Notice("started", "journal", said[0].time, "watching the journal")
    for notice in [started, *said]:
        first.write(notice)
        second.write(notice)
    first.close()
    second.close()
    return path


def test_a_record_two_watchers_appended_counts_each_kill_once(tmp_path: Path) -> None:
    """Issue 26: read back, every kill of such a file was counted twice."""
    record = _two_writers_record(tmp_path)
    empty = tmp_path / "empty.log"
    empty.write_text("[    0.000000] Linux version 6.8.0\n")
    listed = run("list", "--record", str(record), "-k", str(empty), "--tz", "UTC", "-f", "json")
    assert listed.exit_code == 0, listed.output
    document = json.loads(listed.stdout)
    assert [e["victim"]["pid"] for e in document["episodes"]] == [1966928]
    (problem,) = [p["problem"] for p in document["source"]["problems"] if p["name"] == str(record)]
    pid = os.getpid()
    assert f"2 watchers appended this file at once (pids {pid}, {pid + 1})" in problem, problem
    assert "1 kill(s) and 1 other event(s) written twice were read once" in problem, problem
    why = json.loads(
        run("why", "llama-server", "--record", str(record), "-k", str(empty), "-f", "json").stdout
    )
    warnings = [t for t in why["timeline"] if t["kind"] == "warning"]
    assert len(warnings) == len({t["text"] for t in warnings})  # the NVRM warning once, not twice


def test_one_watcher_restarted_on_its_record_is_not_two_writers(tmp_path: Path) -> None:
    said = _replay(_records(SEED000))
    path = tmp_path / "record.jsonl"
    for writer in (100, 200):  # one after the other, as after a restart
        record = BlackBox(str(path), print)
        record.writer = writer
        for notice in said:
            record.write(notice)
        record.close()
    empty = tmp_path / "empty.log"
    empty.write_text("[    0.000000] Linux version 6.8.0\n")
    document = json.loads(run("list", "--record", str(path), "-k", str(empty), "-f", "json").stdout)
    (problem,) = [p["problem"] for p in document["source"]["problems"] if p["name"] == str(path)]
    assert "at once" not in problem and "1 kill(s) and 1 other event(s) written twice" in problem


def test_reading_kmsg_as_a_file_points_to_watch_instead_of_hanging(tmp_path: Path) -> None:
    """Issue 26: `-k /dev/kmsg` waited for ever at the end of the ring buffer."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mknod a /dev/kmsg node (char 1,11) in tmp_path")
    node = tmp_path / "kmsg"
    os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(1, 11))
    started = time.monotonic()
    result = run("list", "-k", str(node))
    assert time.monotonic() - started < 5
    assert result.exit_code == 2, result.output
    assert "is the kernel's live log" in result.output and "oomtrace watch --source kmsg" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("live", ["kmsg-node", "/proc/kmsg"])
@pytest.mark.parametrize("through_stdin", [False, True])
def test_the_kernels_live_logs_are_refused_by_name_and_through_standard_input(
    tmp_path: Path, live: str, through_stdin: bool
) -> None:
    """Issue 41: `-k - < /dev/kmsg` hung (the refusal of `-k /dev/kmsg` did not see it through
    standard input) and `/proc/kmsg` was read: it never ends, and each read takes records from the
    syslog daemon. Standard input is opened O_PATH here: it can be looked at but never read, so
    even a regression cannot take a record from this machine's syslog."""
    if live == "kmsg-node":
        if os.geteuid() != 0:
            pytest.skip("needs root to mknod a /dev/kmsg node (char 1,11) in tmp_path")
        path = str(tmp_path / "kmsg")
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 11))
    elif not os.path.exists(live):
        pytest.skip("this machine has no /proc/kmsg")
    else:
        path = live
    command = [sys.executable, "-m", "oomtrace", "list", "-k", "-" if through_stdin else path]
    fd = os.open(path, os.O_PATH)
    try:
        done = subprocess.run(command, stdin=fd, capture_output=True, text=True, timeout=30)
    finally:
        os.close(fd)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    (line,) = done.stderr.splitlines()
    assert "never ends" in line and "oomtrace watch --source kmsg" in line
    assert ("/proc/kmsg" in line) == (live == "/proc/kmsg")
    assert line.startswith(
        "oomtrace: error: -k - (standard input) is " if through_stdin else f"oomtrace: error: {path} is "
    )


# Lines a busy GPU server's ring buffer holds between reports (bench/make_log.py's noise).
NOISE = (
    "IPv6: ADDRCONF(NETDEV_CHANGE): veth3fa2: link becomes ready",
    'audit: type=1400 audit(1794661083:7): apparmor="DENIED" operation="open" name="/proc/7/cgroup"',
    "usb 1-3: new high-speed USB device number 5 using xhci_hcd",
    "NVRM: Xid (PCI:0000:01:00): 13, pid=4121, name=python3, Graphics Exception: ESR 0x404600=0x80000002",
)


def test_the_batch_scan_asks_the_prefilter_about_every_line_it_would_keep() -> None:
    """A kmsg follower scans each batch for anchors at once (prefilter.candidates) and asks the
    prefilter only about those lines and a report's body: it must keep exactly the lines the
    prefilter keeps when asked about every line, batch seams inside the report included."""
    from oomtrace.prefilter import Prefilter, _holds_anchor_bytes, anchored

    texts = []
    for index, record in enumerate(_records(SEED000)):
        texts += [NOISE[(index + n) % len(NOISE)] for n in range(3)] + [record.message]
    parts = [f"6,{n},{n * 1000},-;{text}\n".encode() for n, text in enumerate(texts)]
    every = Prefilter()
    expected = [n for n, text in enumerate(texts) if every.wants(text)]
    some = Prefilter()
    got = []
    for start in range(0, len(parts), 97):  # batches of 97: seams fall inside the report
        batch = parts[start : start + 97]
        got += [start + n for n in some.candidates(batch) if some.wants(texts[start + n])]
    assert got == expected
    # Noise outside the report left out (inside, a report keeps every line until its kill, and a
    # line with an anchor keeps the 3 after it, its rest where a paste wrapped it), and the
    # report's body kept although its lines hold no anchor.
    noise = [n for n, text in enumerate(texts) if text in NOISE[:3]]
    assert 0 in noise and 0 not in got and len(set(noise) - set(got)) >= 10
    assert any(text.startswith("Node 0 Normal free:") for text in (texts[n] for n in got))
    # Hyperscan's joined scan (when installed) and the loop without it find the same parts.
    assert anchored(parts) == {n for n, part in enumerate(parts) if _holds_anchor_bytes(part)}


def _report_records(reports: int, rows: int, gap_s: float) -> list[Record]:
    """`reports` copies of seed 000's report (journalctl's prefix, a new victim pid each, `gap_s`
    apart), each with `rows` extra tasks rows: a crash loop's backlog, as a follower reads it."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from make_log import BOOTED, report_lines

    body = report_lines()
    row_at = next(i for i, line in enumerate(body) if line.startswith("[") and "pid" not in line) + 1
    row = body[row_at]
    splitter = LineSplitter("kern.log", zone=tz.UTC, year=2026)
    records: list[Record] = []
    number = 0
    for report in range(reports):
        lines = body[:row_at] + [row] * rows + body[row_at:]
        at = BOOTED + timedelta(seconds=100 + report * gap_s)
        for line in lines:
            number += 1
            text = f"{at:%b %d %H:%M:%S} gb10 kernel: {line.replace('1966928', str(2_000_000 + report))}"
            records.extend(splitter.split(text, number))
    return records


def _kills_told(said: list[Notice]) -> list[int]:
    return [n.data["story"]["episode"]["victim"]["pid"] for n in said if n.event == "kill"]


def test_a_backlog_larger_than_the_buffer_tells_every_kill_and_holds_the_cursor() -> None:
    """Issue 41: a restart after 600 reports of 126 lines told the last 159. Read as a catch-up
    does (batches at one instant, the settle never reached), every kill is told once, and the
    cursor never passes a kill not yet told."""
    from oomtrace.watch import storybuffer as module

    records = _report_records(600, 55, 60.0)
    assert len(records) > 3 * module.BUFFER_MAX
    kill_lines = [
        (i, int(r.message.split("Killed process ")[1].split()[0]))
        for i, r in enumerate(records)
        if "Killed process" in r.message
    ]
    said: list[Notice] = []
    watcher = Watcher(parse_warn(LOG_ONLY), UTC, "kern.log", said.append, "boot-1")
    now = datetime(2026, 12, 1, tzinfo=UTC)
    position = 0
    for start in range(0, len(records), 1000):
        chunk = tuple(records[start : start + 1000])
        cursors = tuple(str(position + i) for i in range(len(chunk)))
        position += len(chunk)
        watcher.feed(Batch(chunk, str(position), cursors_before=cursors), 5.0, now)
        told = set(_kills_told(said))
        # The cursor is at or before the first record of the oldest kill not told.
        first_untold = next((i for i, pid in kill_lines if i < position and pid not in told), None)
        if first_untold is not None:
            assert watcher.cursor is not None and int(watcher.cursor) <= first_untold
    watcher.tick(6.0, now)
    pids = _kills_told(said)
    assert sorted(pids) == [2_000_000 + n for n in range(600)]
    assert len(watcher._story.records) <= module.BUFFER_MAX + 200
    assert watcher.cursor == str(position)
    # Each story still has its report: the trigger and the tasks table.
    kills = [n for n in said if n.event == "kill"]
    assert all(n.data["story"]["episode"]["trigger"]["comm"] == "dashboard-servi" for n in kills)


def test_a_live_loop_of_kills_faster_than_the_settle_is_told_as_it_goes() -> None:
    """Issue 41: kills with 1,000-row tables 0.25 s apart told 20 of 40: each kill moved the
    settle on, so nothing was told until the loop stopped, and the buffer lost the rest."""
    from oomtrace.watch.watcher import SETTLE_MAX_S

    records = _report_records(40, 1000, 0.25)
    said: list[Notice] = []
    watcher = Watcher(parse_warn(LOG_ONLY), UTC, "kern.log", said.append, "boot-1")
    now = 0.0
    told_during = 0
    for record in records:
        if "Killed process" in record.message:
            now += 0.25
        watcher.feed(Batch((record,), None), now, datetime(2026, 12, 1, tzinfo=UTC))
        watcher.tick(now, datetime(2026, 12, 1, tzinfo=UTC))
        if now > 2 * SETTLE_MAX_S and not told_during:
            told_during = len(_kills_told(said))
    assert told_during > 0  # told while the loop still ran
    watcher.tick(now + 1, datetime(2026, 12, 1, tzinfo=UTC))
    assert sorted(_kills_told(said)) == [2_000_000 + n for n in range(40)]


def test_a_burst_of_two_thousand_reports_is_told_whole() -> None:
    """Issue 41: a burst of 2,000 kills told 264 (their reports pushed each other out of the
    buffer before the settle came)."""
    records = _report_records(2000, 0, 1.0)
    said: list[Notice] = []
    watcher = Watcher(parse_warn(LOG_ONLY), UTC, "kern.log", said.append, "boot-1")
    for start in range(0, len(records), 5000):
        watcher.feed(
            Batch(tuple(records[start : start + 5000]), None), 1.0, datetime(2026, 12, 1, tzinfo=UTC)
        )
    watcher.tick(2.0, datetime(2026, 12, 1, tzinfo=UTC))
    assert sorted(_kills_told(said)) == [2_000_000 + n for n in range(2000)]


@pytest.mark.parametrize("how", ["time limit", "watcher stops"])
def test_a_hooks_background_child_is_ended_with_its_group_after_the_hook_exits(
    tmp_path: Path, how: str
) -> None:
    """Issue 41: `--exec 'sleep 1004 & exit 0'` left the sleep running after the hook and the
    watcher. The hook's time limit and the watcher's stop end the group the hook leaves."""
    pid_file = tmp_path / "pgid"
    hook = Hook(f"echo $$ > {pid_file}; sleep 1004 & exit 0", 60 if how == "watcher stops" else 0.5)
    hook.send(Notice("kill", "kernel-oom", datetime.now(UTC), "llama-server"))
    pgid = int(_wait_for(pid_file))
    time.sleep(0.3)
    assert _group_alive(pgid), "the background sleep is running (the hook itself has exited)"
    if how == "watcher stops":
        hook.close(wait_s=0.2)
    deadline = time.monotonic() + 10
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(pgid), "the hook's background child outlived its group's end"
    assert hook.failures == 0  # the hook itself succeeded: nothing to say
    if how == "time limit":
        hook.close()


def test_a_kill_events_time_is_the_kills_and_when_it_was_told_is_a_field_of_its_own() -> None:
    """Issue 39: the top-level `time` of a JSON-lines kill was when the watcher told it, which a
    log shipper (docs/fleets.md's OpenTelemetry example) takes as the record's time: a kill
    caught up after a restart was dated hours late. Now `time` is the kill line's, `told` when
    it was said."""
    records = _records(SEED000)
    said: list[Notice] = []
    watcher = Watcher(parse_warn(LOG_ONLY), UTC, str(SEED000), said.append, "boot-1")
    told_at = datetime(2026, 12, 4, 7, 0, tzinfo=UTC)  # a catch-up, weeks after the kill
    watcher.feed(Batch(tuple(records), None), 0.0, told_at)
    watcher.tick(1.0, told_at)
    (kill,) = [n.to_json() for n in said if n.event == "kill"]
    assert kill["time"] == "2026-11-14T13:12:12+00:00"
    assert kill["told"] == "2026-12-04T07:00:00+00:00"


def test_a_killers_record_not_proven_is_told_as_a_claim_not_a_kill() -> None:
    """Issue 41: `logger -t earlyoom` made the watcher tell a kill and run the hooks. A record
    whose sender is not proven is a "claim" notice (no hook, no metric, not counted); the same
    record the journal proves is earlyoom's own is a kill."""
    from oomtrace.records import PROVEN

    line = 'Nov 19 21:50:01 gb10 earlyoom[4242]: sending SIGKILL to process 1 uid 0 "systemd": oom_score 900'
    (record,) = LineSplitter("syslog", zone=tz.UTC, year=2026).split(line, 1)
    (claim,) = [n for n in _replay([record]) if n.event in ("kill", "claim")]
    assert claim.event == "claim" and claim.kind == "earlyoom" and claim.data["doubt"] == "unverified"
    assert "systemd (pid 1) was killed by earlyoom, says a record that is unverified" in claim.text
    (kill,) = [n for n in _replay([replace(record, sender=PROVEN)]) if n.event in ("kill", "claim")]
    assert kill.event == "kill"


def test_the_story_of_a_report_of_25000_rows_is_what_why_reads(tmp_path: Path) -> None:
    """Issue 41: the watcher's story of a big report said "997 of 4,000 rows", trigger None,
    header and Mem-Info missing, where `why` over the same log read 25,002 rows and the trigger.
    The bound now applies to a report's body past 200,000 records, not to a story's records."""
    lines = SEED000.read_text().splitlines()
    header = next(n for n, line in enumerate(lines) if "pgtables_bytes" in line)
    prefix = lines[header + 1].split("[")[0]
    rows = [
        f"{prefix}[{100_000 + k:>7}]  1000 {100_000 + k:>6}   100000     2000     1000     1000         0"
        "   200704        0             0 worker"
        for k in range(25_000)
    ]
    log = tmp_path / "big.log"
    log.write_text("\n".join(lines[: header + 1] + rows + lines[header + 1 :]) + "\n")
    (kill,) = [n for n in _replay(_records(log)) if n.event == "kill"]
    told = kill.data["story"]
    why = json.loads(
        run("why", "llama-server", "-k", str(log), "--tz", "UTC", "--year", "2026", "-f", "json").stdout
    )
    for key in ("trigger", "constraint", "victim", "mem_info", "task_columns"):
        assert told["episode"][key] == why["episode"][key], key
    assert told["episode"]["trigger"]["comm"] == "dashboard-servi"
    said = json.dumps(told)
    assert "25,012 rows (981 kept" in said and said.count("rows") == json.dumps(why).count("rows")
