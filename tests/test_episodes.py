"""Episode assembly: cut, mixed and rate-limited reports, incidents and warning runs."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from dateutil import tz

from oomtrace.analyze import analyze
from oomtrace.episodes import EpisodeBuilder
from oomtrace.incidents import moment_gap
from oomtrace.model import Analysis
from oomtrace.prefixes import LineSplitter
from oomtrace.rejoin import parse_records
from oomtrace.sources.textfile import KernelLogFile
from tests.conftest import FIXTURES, run
from tests.reshaped import BOOT, global_report, memcg_report, nvrm_line

GOLDEN_LOGS = sorted(FIXTURES.glob("*/kernel.log"))


def analyze_lines(lines: list[str], source: str = "t") -> Analysis:
    builder = EpisodeBuilder()
    builder.begin_source(source, "file")
    splitter = LineSplitter(source, zone=tz.UTC, year=2026)
    records = (r for number, line in enumerate(lines, start=1) for r in splitter.split(line, number))
    for record, event in parse_records(records):
        builder.feed(record, event)
    return builder.finish()


def kill_pids(lines: list[str]) -> set[int | None]:
    """The victims named by kill lines (not those inferred from a summary or a chosen task)."""
    return {e.victim.pid for e in analyze_lines(lines).episodes if e.victim and e.victim.pid_from is None}


@pytest.mark.parametrize("log", GOLDEN_LOGS, ids=lambda p: p.parent.name)
def test_a_report_cut_at_any_line_keeps_what_it_holds(log: Path) -> None:
    lines = log.read_text().splitlines()
    whole = kill_pids(lines)
    for cut in range(len(lines) + 1):
        head, tail = lines[:cut], lines[cut:]
        for part in (head, tail):
            analysis = analyze_lines(part)
            surviving = {int(x) for line in part for x in _killed_pid(line)}
            from_kill_lines = {
                e.victim.pid for e in analysis.episodes if e.victim and e.victim.pid_from is None
            }
            assert from_kill_lines == surviving & whole
            for episode in analysis.episodes:
                if episode.victim is not None and episode.victim.pid_from is not None:
                    # Without its kill line, a report names its victim from the summary or the
                    # chosen task, says so, and still says the kill line is missing.
                    assert episode.victim.pid in _named_pids(lines) and "kill" in episode.missing
                if episode.victim is None or episode.trigger is None:
                    assert episode.missing, "a cut report must say what it lacks"


def _named_pids(lines: list[str]) -> set[int]:
    """Pids a report names as its victim: kill lines, chosen tasks, oom-kill summaries."""
    found = set()
    for line in lines:
        for marker, end in (("Killed process ", " "), ("ill process ", " "), (",pid=", ",")):
            if marker in line:
                word = line.split(marker, 1)[1].split(end)[0].rstrip(",")
                if word.isdigit():
                    found.add(int(word))
    return found


def _killed_pid(line: str) -> list[str]:
    marker = "Killed process "
    if marker not in line:
        return []
    return [line.split(marker, 1)[1].split()[0].rstrip(",")]


@pytest.mark.parametrize("log", GOLDEN_LOGS, ids=lambda p: p.parent.name)
def test_dropping_any_one_line_keeps_every_surviving_kill(log: Path) -> None:
    lines = log.read_text().splitlines()
    whole = kill_pids(lines)
    for dropped in range(len(lines)):
        rest = lines[:dropped] + lines[dropped + 1 :]
        expected = {int(x) for line in rest for x in _killed_pid(line)} & whole
        assert kill_pids(rest) == expected


def test_rate_limited_kills_become_header_less_episodes() -> None:
    analysis = analyze_lines(
        [
            "[  100.000001] oom_kill_process: 7 callbacks suppressed",
            "[  100.000002] Out of memory: Killed process 42 (worker) total-vm:1000kB, anon-rss:900kB, "
            "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:12kB oom_score_adj:0",
        ]
    )
    (episode,) = analysis.episodes
    assert episode.victim is not None and episode.victim.pid == 42
    assert episode.suppressed_reports == 7
    assert "header" in episode.missing and "kill" not in episode.missing
    assert episode.constraint == "global"


def test_a_page_allocation_failure_dump_is_not_an_oom_episode() -> None:
    log = FIXTURES / "seed004_tensorfold_cotenant_gb10" / "kernel.log"
    analysis = analyze([KernelLogFile(str(log), tz.UTC)])
    assert len(analysis.episodes) == 1
    assert {w.kind for w in analysis.warnings} == {"nvrm-xid", "nvrm-no-memory", "page-allocation-failure"}


def test_eight_kib_pages_are_inferred() -> None:
    # sparc64 prints the same report with 8 KiB pages: rss in pages, the kill line in kB.
    analysis = analyze_lines(
        [
            "big invoked oom-killer: gfp_mask=0x201da, order=0, oom_score_adj=0",
            "[ pid ]   uid  tgid total_vm      rss nr_ptes swapents oom_score_adj name",
            "[ 7001]     0  7001   200000   100000      90        0             0 big",
            "Out of memory: Kill process 7001 (big) score 900 or sacrifice child",
            "Killed process 7001 (big) total-vm:1600000kB, anon-rss:799000kB, file-rss:1000kB, shmem-rss:0kB",
        ]
    )
    assert analysis.episodes[0].page_size_kb == 8


def test_kills_within_a_minute_are_one_incident_and_later_ones_another() -> None:
    def kill(when: str, pid: int) -> str:
        return f"2026-11-14T{when}+00:00 h kernel: Out of memory: Killed process {pid} (p{pid}) total-vm:1kB, anon-rss:1kB, file-rss:0kB"

    analysis = analyze_lines([kill("10:00:00", 1), kill("10:00:30", 2), kill("10:05:00", 3)])
    assert [i.episode_ids for i in analysis.incidents] == [(1, 2), (3,)]


def test_warnings_collapse_and_only_recent_ones_count() -> None:
    nvrm = "NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) returned from _memdescAllocInternal(pMemDesc)"
    lines = [
        f"2026-11-14T07:00:00+00:00 h kernel: {nvrm}",  # three hours before: not this incident's
        f"2026-11-14T09:58:00+00:00 h kernel: {nvrm}",
        f"2026-11-14T09:59:00+00:00 h kernel: {nvrm}",
        "2026-11-14T10:00:00+00:00 h kernel: Out of memory: Killed process 9 (x) total-vm:1kB, anon-rss:1kB, file-rss:0kB",
    ]
    analysis = analyze_lines(lines)
    assert [(w.count, w.first.line) for w in analysis.warnings] == [(1, 1), (2, 2)]
    (incident,) = analysis.incidents
    assert incident.earliest_warning is not None and incident.earliest_warning.first.line == 2
    assert incident.lead_time_s == 120.0


def test_two_boots_in_one_file_keep_their_own_boot_times() -> None:
    lines = [
        "Nov 14 10:00:00 h kernel: [  100.000000] first boot line",
        "Nov 14 10:00:01 h kernel: [  101.000000] Out of memory: Killed process 1 (a) total-vm:1kB, anon-rss:1kB, file-rss:0kB",
        "[    5.000000] Out of memory: Killed process 2 (b) total-vm:1kB, anon-rss:1kB, file-rss:0kB",
        "Nov 14 12:00:10 h kernel: [   10.000000] second boot line",
    ]
    analysis = analyze_lines(lines)
    first, second = analysis.episodes
    assert first.moment.time is not None and first.moment.time.strftime("%H:%M:%S") == "10:00:01"
    assert second.moment.boot != first.moment.boot
    assert second.moment.time is not None and second.moment.time.strftime("%H:%M:%S") == "12:00:05"


def test_files_are_merged_in_time_order(tmp_path: Path) -> None:
    old = tmp_path / "kern.log.1"
    new = tmp_path / "kern.log"
    old.write_text(
        "2026-11-13T10:00:00+00:00 h kernel: Out of memory: Killed process 1 (old) total-vm:1kB, anon-rss:1kB, file-rss:0kB\n"
    )
    new.write_text(
        "2026-11-14T10:00:00+00:00 h kernel: Out of memory: Killed process 2 (new) total-vm:1kB, anon-rss:1kB, file-rss:0kB\n"
    )
    analysis = analyze([KernelLogFile(str(new), tz.UTC), KernelLogFile(str(old), tz.UTC)])
    assert [e.victim.comm for e in analysis.episodes if e.victim] == ["old", "new"]


def test_the_chosen_parent_and_its_killed_child() -> None:
    log = FIXTURES / "rhel6_2.6.32_messages" / "kernel.log"
    (episode,) = analyze([KernelLogFile(str(log), tz.UTC, year=2026)]).episodes
    assert episode.chosen is not None and episode.chosen.pid == 4410
    assert episode.victim is not None and episode.victim.pid == 4417
    assert episode.victim.uid == 501


def test_oom_looking_lines_that_do_not_parse_are_counted() -> None:
    analysis = analyze_lines(["Killed process garbage here", "Kill process twelve (x) garbage"])
    assert analysis.unparsed_count == 2
    assert analysis.episodes == ()


def test_a_header_cut_after_the_name_still_opens_a_report() -> None:
    (episode,) = analyze_lines(["x invoked oom-killer: nonsense"]).episodes
    assert episode.trigger is not None and episode.trigger.comm == "x"
    assert episode.trigger.gfp_mask is None and episode.trigger.order is None


def test_warning_runs_end_at_a_kill_and_each_incident_has_its_own_lead() -> None:
    """A server killed every hour, the driver warning 3 minutes before each kill."""
    lines = []
    for hour in range(6):
        base = 1000.0 + hour * 3600
        for dt in (0.0, 6.0):
            lines.append(
                f"[{base + dt:.6f}] NVRM: nvCheckFailedNoMemory: Check failed: Out of memory [NV_ERR_NO_MEMORY] "
                "(0x00000051) returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1359"
            )
        lines.append(
            f"[{base + 193:.6f}] Out of memory: Killed process {100 + hour} (llama-server) total-vm:100kB, "
            "anon-rss:50kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:8kB oom_score_adj:200"
        )
    analysis = analyze_lines(lines)
    assert len(analysis.incidents) == 6
    assert [w.count for w in analysis.warnings] == [2] * 6
    assert [i.lead_time_s for i in analysis.incidents] == [193.0] * 6


def test_a_memory_warning_is_named_first_over_earlier_xid_chatter() -> None:
    lines = [
        "[100.000000] NVRM: Xid (PCI:0000:01:00): 13, pid=4121, Graphics SM Warp Exception",
        "[250.000000] NVRM: nvCheckFailedNoMemory: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) "
        "returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1359",
        "[300.000000] Out of memory: Killed process 4121 (python3) total-vm:100kB, anon-rss:50kB, file-rss:0kB",
    ]
    (incident,) = analyze_lines(lines).incidents
    assert incident.earliest_warning is not None and incident.earliest_warning.kind == "nvrm-no-memory"
    assert incident.lead_time_s == 50.0
    assert {w.kind for w in incident.warnings} == {"nvrm-xid", "nvrm-no-memory"}


def test_a_kill_read_from_two_sources_is_one_episode(tmp_path: Path) -> None:
    """kern.log and a copy that overlaps it (kern.log.1, a syslog beside the journal): the same
    kill is one episode, and the footer says it was found twice."""
    log = FIXTURES / "seed002_ds4_server_gb10" / "kernel.log"
    copy = tmp_path / "kern.log.1"
    copy.write_bytes(log.read_bytes())
    once = json.loads(run("list", "-k", str(log), "--tz", "UTC", "--year", "2026", "-f", "json").stdout)
    twice = run("list", "-k", str(log), "-k", str(copy), "--tz", "UTC", "--year", "2026", "-f", "json")
    document = json.loads(twice.stdout)
    assert len(document["episodes"]) == len(once["episodes"]) == 4
    assert document["source"]["kills_read_twice"] == 4
    # The warnings too (issue 39): its one page allocation failure is one line, not two.
    assert [w["count"] for w in document["warnings"]] == [w["count"] for w in once["warnings"]] == [1]
    assert document["source"]["warning_lines_read_twice"] == 1
    text = run("list", "-k", str(log), "-k", str(copy), "--tz", "UTC", "--year", "2026").stdout
    assert "4 kill(s) read twice were counted once" in " ".join(text.split())
    assert "1 warning line(s) found in two sources were counted once" in " ".join(text.split())


def _reshaped(lines: list[str]) -> Analysis:
    """Lines of tests.reshaped (dmesg uptimes of the CI machine's boot) read as the CLI reads them."""
    builder = EpisodeBuilder()
    builder.begin_source("t", "file", boot_time=datetime.fromisoformat(BOOT))
    splitter = LineSplitter("t", zone=tz.UTC, year=2026)
    records = (r for number, line in enumerate(lines, start=1) for r in splitter.split(line, number))
    for record, event in parse_records(records):
        builder.feed(record, event)
    return builder.finish()


def _victims(analysis: Analysis) -> list[tuple[str, ...]]:
    return [
        tuple(analysis.episode(i).victim.comm for i in incident.episode_ids)  # type: ignore[union-attr]
        for incident in analysis.incidents
    ]


def test_kills_in_two_cgroup_trees_are_two_incidents_even_seconds_apart() -> None:
    """Issue 22: two memcg OOMs 14 s apart in /a and /b (neither under the other) are two
    shortages; a kill in /a/job under /a, 16 s later, is /a's."""
    lines = memcg_report(100.0, "/a", 3001, "job-a") + memcg_report(114.0, "/b", 3002, "job-b")
    lines += memcg_report(130.0, "/a/job", 3003, "job-a2")
    analysis = _reshaped(lines)
    assert _victims(analysis) == [("job-a", "job-a2"), ("job-b",)]
    first, second = analysis.incidents
    # What else happened on the machine at the same time is said, in both directions.
    assert first.beside == (2,) and second.beside == (1, 3)


def test_a_memcg_kill_beside_a_global_one_is_its_own_incident() -> None:
    lines = memcg_report(200.0, "/a", 4001, "job-a") + global_report(205.0, 5001, "hog")
    lines += global_report(206.0, 5002, "hog2") + memcg_report(207.0, "/a", 4002, "job-a2")
    analysis = _reshaped(lines)
    assert [e.constraint for e in analysis.episodes] == ["memcg", "global", "global", "memcg"]
    assert _victims(analysis) == [("job-a", "job-a2"), ("hog", "hog2")]


def test_kills_of_the_same_cgroup_a_minute_apart_are_still_two_incidents() -> None:
    analysis = _reshaped(memcg_report(100.0, "/a", 1, "x") + memcg_report(200.0, "/a", 2, "y"))
    assert _victims(analysis) == [("x",), ("y",)]


def test_a_warning_after_an_incidents_first_kill_is_held_for_its_later_kills() -> None:
    """The NVRM line 75 ms before the second kill of a burst is no warning of the first kill
    and came before no incident's start: the incident keeps it for the kills after it."""
    second = global_report(206.0, 5002, "hog2")
    kill_at = 206.0 + 0.0001 * (len(second) - 1)
    lines = [*global_report(205.0, 5001, "hog"), nvrm_line(kill_at - 0.075), *second]
    analysis = _reshaped(lines)
    (incident,) = analysis.incidents
    assert incident.warnings == () and incident.earliest_warning is None
    (during,) = incident.during
    assert during.kind == "nvrm-no-memory"
    gap = moment_gap(during.first, analysis.episode(2).moment)
    assert gap is not None and abs(gap - 0.075) < 1e-3


FORK_BOMB = (
    Path(__file__).parent / "realworld" / "cases" / "k8s-docker-fork-bomb-syslog-vmalloc" / "input.txt"
)


def _list_json(*args: str) -> dict:  # type: ignore[type-arg]
    return json.loads(run("list", *args, "--tz", "UTC", "--year", "2026", "-f", "json").stdout)  # type: ignore[no-any-return]


def _warning_counts(document: dict) -> list[tuple[str, int]]:  # type: ignore[type-arg]
    return sorted((w["key"], w["count"]) for w in document["warnings"])


def test_a_syslog_and_the_kern_log_of_one_machine_count_each_warning_once(tmp_path: Path) -> None:
    """Issue 41: the syslog holds every kernel line of kern.log and more; read together, the
    vmalloc failures are counted once, as the kills are."""
    kernel = [line for line in FORK_BOMB.read_text().splitlines() if " kernel: " in line]
    kern_log = tmp_path / "kern.log"
    kern_log.write_text("\n".join(kernel) + "\n")
    syslog = tmp_path / "syslog"
    syslog.write_text(
        "\n".join(
            line
            for k in kernel
            for line in (k, "May 15 23:01:54 ubuntu-s-1vcpu-2gb-ams3-01 dockerd[812]: ok")
        )
        + "\n"
    )
    once = _list_json("-k", str(kern_log))
    both = _list_json("-k", str(kern_log), "-k", str(syslog))
    assert once["warnings"] and _warning_counts(both) == _warning_counts(once)
    assert len(both["episodes"]) == len(once["episodes"])
    assert both["source"]["warning_lines_read_twice"] == sum(n for _, n in _warning_counts(once))


def test_a_warning_said_twice_in_one_second_of_one_log_is_two() -> None:
    """What the deduplication must not do: one source's repeats within a second are real repeats."""
    line = (
        "May 15 23:01:54 host kernel: python3: vmalloc: allocation failure, allocated 12288 of 20480 "
        "bytes, mode:0x15080c0(GFP_KERNEL_ACCOUNT|__GFP_ZERO), nodemask=(null)"
    )
    (warning,) = analyze_lines([line, line, line]).warnings
    assert warning.count == 3


def test_a_log_named_twice_is_read_once(tmp_path: Path) -> None:
    """`-k x -k x` (or x by another path) is x: its kills and warnings are not counted twice."""
    log = FIXTURES / "seed002_ds4_server_gb10" / "kernel.log"
    once = _list_json("-k", str(log))
    twice = _list_json("-k", str(log), "-k", str(log), "-k", f"{log.parent}/../{log.parent.name}/kernel.log")
    assert twice["source"]["names"] == [str(log)]
    assert twice["episodes"] == once["episodes"] and twice["warnings"] == once["warnings"]
    assert twice["source"]["kills_read_twice"] == 0


def test_an_oomtrace_report_pasted_into_its_log_adds_no_kill(tmp_path: Path) -> None:
    """Issue 41: a Markdown report quotes the kill line; pasted below the log it came from, that
    kill is one kill, not a fifth episode and a second count of ds4-server."""
    log = FIXTURES / "seed002_ds4_server_gb10" / "kernel.log"
    report = run("report", "-k", str(log), "--tz", "UTC", "--year", "2026", "-f", "markdown").stdout
    assert "Killed process 124531 (ds4-server)" in report
    pasted = tmp_path / "kern.log"
    pasted.write_text(log.read_text() + report)
    once = _list_json("-k", str(log))
    document = _list_json("-k", str(pasted))
    assert [e["victim"]["pid"] for e in document["episodes"]] == [
        e["victim"]["pid"] for e in once["episodes"]
    ]
    assert document["source"]["kills_read_twice"] == 1
