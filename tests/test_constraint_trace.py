"""The constraint read off the call trace when no line says it, per kernel series (issue 38)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomtrace.episodes import constraint
from tests.conftest import ROOT, run

CASES = ROOT / "tests" / "realworld" / "cases"
RHEL6 = ROOT / "fixtures" / "rhel6_2.6.32_messages" / "kernel.log"


def _list(path: Path) -> list[dict]:
    result = run("list", "-k", str(path), "--format", "json", "--tz", "UTC", "--year", "2026")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["episodes"]


def test_a_trace_printed_all_unreliable_is_read() -> None:
    # CentOS 6.5 (2.6.32-431): every frame `? `, out_of_memory under __alloc_pages_nodemask and
    # alloc_pages_current; the kill line is cut off, so the trace is the only witness.
    episodes = _list(CASES / "kern-centos66-allocating-task-top-then-ruby-starred" / "input.txt")
    assert (episodes[1]["constraint"], episodes[1]["constraint_from"]) == (
        "global",
        "inferred from the call trace",
    )


def test_a_cut_rhel6_report_says_its_constraint_came_from_the_trace(tmp_path: Path) -> None:
    # The real RHEL 6 log with the `Out of memory: Kill process` line lost, as cut pastes lose it:
    # no line says the constraint, the all-`?` trace does.
    lines = [
        line for line in RHEL6.read_text().splitlines(keepends=True) if "Out of memory: Kill" not in line
    ]
    log = tmp_path / "cut.log"
    log.write_text("".join(lines))
    episode = _list(log)[-1]
    assert (episode["constraint"], episode["constraint_from"]) == ("global", "inferred from the call trace")
    story = run("why", "java", "-k", str(log), "-f", "markdown", "--tz", "UTC", "--year", "2026").stdout
    assert "global OOM: the whole machine ran out of memory (inferred from the call trace)" in " ".join(
        story.split()
    )
    assert "oom-kill summary" not in story


def _report(frames: list[str]) -> str:
    head = (
        "[ 100.000001] a.out invoked oom-killer: gfp_mask=0x201da, order=0, oom_score_adj=0\n"
        "[ 100.000002] Call Trace:\n"
    )
    body = "".join(f"[ 100.000003]  {frame}+0x10/0x20\n" for frame in frames)
    return (
        head
        + body
        + "[ 100.000004] Killed process 42 (a.out) total-vm:1000kB, anon-rss:900kB, file-rss:0kB\n"
    )


@pytest.mark.parametrize(
    ("series", "frame"),
    [(s, f) for s, frames in constraint._MEMCG_FRAMES_BY_SERIES.items() for f in frames],
)
def test_every_series_memcg_frame_says_memcg(tmp_path: Path, series: str, frame: str) -> None:
    log = tmp_path / "k.log"
    log.write_text(_report(["dump_stack", "dump_header", "oom_kill_process", "out_of_memory", frame]))
    episode = _list(log)[0]
    assert (episode["constraint"], episode["constraint_from"]) == ("memcg", "inferred from the call trace"), (
        series
    )


@pytest.mark.parametrize(
    ("series", "frame"),
    [(s, f) for s, frames in constraint._ALLOCATOR_FRAMES_BY_SERIES.items() for f in frames],
)
def test_every_series_allocator_frame_under_out_of_memory_says_global(
    tmp_path: Path, series: str, frame: str
) -> None:
    log = tmp_path / "k.log"
    log.write_text(_report(["dump_stack", "dump_header", "oom_kill_process", "out_of_memory", frame]))
    episode = _list(log)[0]
    assert (episode["constraint"], episode["constraint_from"]) == (
        "global",
        "inferred from the call trace",
    ), series


def test_a_stale_marked_frame_beside_reliable_ones_is_not_read(tmp_path: Path) -> None:
    # 4.x+: the OOM killer's frames are unmarked; a `? try_charge` word left on the stack is not
    # a memcg OOM.
    text = _report(["dump_stack", "dump_header", "oom_kill_process", "out_of_memory", "? try_charge"])
    log = tmp_path / "k.log"
    log.write_text(text)
    assert _list(log)[0]["constraint"] is None


def test_out_of_memory_alone_says_nothing(tmp_path: Path) -> None:
    log = tmp_path / "k.log"
    log.write_text(_report(["dump_stack", "dump_header", "oom_kill_process", "out_of_memory"]))
    assert _list(log)[0]["constraint"] is None


def test_a_cpuset_that_leaves_out_a_node_is_not_called_global(tmp_path: Path) -> None:
    # mems_allowed=0 on a machine whose Mem-Info shows node 1: constrained_alloc() may have said
    # CONSTRAINT_CPUSET, and the allocator frames are the same either way.
    frames = ["dump_stack", "dump_header", "oom_kill_process", "out_of_memory", "__alloc_pages_nodemask"]
    lines = _report(frames).splitlines(keepends=True)
    zones = (
        "[ 100.000003] Node 0 Normal free:9000kB min:8000kB low:10000kB high:12000kB\n"
        "[ 100.000003] Node 1 Normal free:900000kB min:8000kB low:10000kB high:12000kB\n"
    )
    narrowed = (
        lines[0]
        + "[ 100.000001] a.out cpuset=/pinned mems_allowed=0\n"
        + "".join(lines[1:-1])
        + zones
        + lines[-1]
    )
    log = tmp_path / "k.log"
    log.write_text(narrowed)
    assert _list(log)[0]["constraint"] is None
    whole = narrowed.replace("mems_allowed=0\n", "mems_allowed=0-1\n")
    log.write_text(whole)
    assert _list(log)[0]["constraint"] == "global"
