"""Every printk format of an OOM report, series by series, filled as the kernel fills it (issue 38).

Each format string below is copied from the kernel source named beside it (the file, the
function, the series, and the stored copy it was read from: the code corpus's `read_file` or
`find_string`), not from a paste. A case fills the formats with known values the way printk
would, prefixes each line with dmesg's `[ uptime]`, runs `oomtrace list -f json` in-process and
asserts that every value comes back. Synthetic text on purpose: the real pastes (tests/realworld)
are the measure of what people post; these are the measure of what the kernel can print.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run

# printk's conversions as these formats use them: flags, width, length, and three %p
# extensions (%pGg: the gfp flags in words; %*pbl: a nodemask as a list; %pV: a nested format),
# given here already formatted, as the kernel formats them before they reach the line.
_CONVERSION = re.compile(
    r"%(?P<ext>\*pbl|pGg|pV)|%(?P<flags>[#-]?)(?P<width>\d*)(?:ll|l|h)?(?P<conv>[diusx%])"
)


def printk(fmt: str, *args: Any) -> str:
    """`fmt` filled with `args` as the kernel's vsnprintf fills it, without the trailing newline."""
    values = iter(args)

    def one(match: re.Match[str]) -> str:
        if match["ext"]:
            return str(next(values))
        conv = match["conv"]
        if conv == "%":
            return "%"
        value = next(values)
        text = (("0x" if match["flags"] == "#" else "") + format(value, "x")) if conv == "x" else str(value)
        width = int(match["width"] or 0)
        return text.ljust(width) if match["flags"] == "-" else text.rjust(width)

    line = _CONVERSION.sub(one, fmt)
    assert next(values, None) is None, f"too many values for {fmt!r}"
    return line.removesuffix("\n")


@dataclass(frozen=True)
class Report:
    """One OOM report as a kernel series prints it: its lines and the facts they hold."""

    series: str
    lines: tuple[str, ...]
    facts: dict[str, Any]
    tasks: dict[str, Any] = field(default_factory=dict)


def _dmesg(lines: tuple[str, ...], start: float = 5012.104233) -> str:
    return "".join(f"[{start + i * 0.000011:12.6f}] {line}\n" for i, line in enumerate(lines))


# ---- 2.6.32 (mainline) -------------------------------------------------------------------
# mm/oom_kill.c, 2.6.32, read from zybsyzlz/linux-2.6.32 (code corpus).
# oom_kill_process(): the header
HDR_2_6_32 = "%s invoked oom-killer: gfp_mask=0x%x, order=%d, oom_adj=%d\n"
# dump_tasks()
TASKS_2_6_32 = "[ pid ]   uid  tgid total_vm      rss cpu oom_adj name\n"
ROW_2_6_32 = "[%5d] %5d %5d %8lu %8lu %3d     %3d %s\n"
# oom_kill_process(): the chosen task; __oom_kill_task(): the kill
CHOSEN_2_6_32 = "%s: kill process %d (%s) score %li or a child\n"
KILL_2_6_32 = "Killed process %d (%s)\n"

# ---- 2.6.33-2.6.35 ---------------------------------------------------------------------
# mm/oom_kill.c __oom_kill_task(), 2.6.33 (mmotm-2.6.32 patches in the linux-mm archive,
# find_string "vsz:%lukB, anon-rss:%lukB"): the kill with sizes, `vsz:` before total-vm.
KILL_VSZ = "Killed process %d (%s) vsz:%lukB, anon-rss:%lukB, file-rss:%lukB\n"

# ---- RHEL 6 (2.6.32-xxx.el6) -----------------------------------------------------------
# mm/oom_kill.c dump_header() and dump_tasks(), RHEL 6 2.6.32-642.6.2.el6, read from
# functor/linux-2.6.32-642.6.2.el6 (code corpus).
HDR_RHEL6 = "%s invoked oom-killer: gfp_mask=0x%x, order=%d, oom_adj=%d, oom_score_adj=%d\n"
TASKS_RHEL6 = "[ pid ]   uid  tgid total_vm      rss cpu oom_adj oom_score_adj name\n"
ROW_RHEL6 = "[%5d] %5d %5d %8lu %8lu %3u     %3d         %5d %s\n"
# mm/oom_kill.c oom_kill_task(), RHEL 6 (an annotated RHEL 6 oom_kill.c, find_string
# "Killed process %d, UID %d, (%s)").
KILL_RHEL6 = "Killed process %d, UID %d, (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB\n"

# ---- 3.10 ------------------------------------------------------------------------------
# mm/oom_kill.c, 3.10, read from AndreiLux/ref-3.10 (code corpus; the !CONFIG_ZOOM_KILLER
# branches, which are mainline's). dump_header(), dump_tasks(), oom_kill_process().
HDR_3_10 = "%s invoked oom-killer: gfp_mask=0x%x, order=%d, oom_score_adj=%hd\n"
TASKS_3_10 = "[ pid ]   uid  tgid total_vm      rss nr_ptes swapents oom_score_adj name\n"
ROW_3_10 = "[%5d] %5d %5d %8lu %8lu %7lu %8lu         %5hd %s\n"
CHOSEN_3_10 = "%s: Kill process %d (%s) score %d or sacrifice child\n"
KILL_3_10 = "Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB\n"
# mm/memcontrol.c mem_cgroup_print_oom_info(), 2.6.3x-4.x: `Task in ` + the task's cgroup +
# ` killed as a result of limit of ` + the limited cgroup (pr_info/pr_cont pieces; the 2.6.3x
# form, `"Task in %s killed"` + `" as a result of limit of %s\n"`, prints the same line: linux-mm
# patch by Balbir Singh, find_string "killed as a result of limit of"), then its usage.
TASK_IN = "Task in %s killed as a result of limit of %s\n"
MEMCG_USAGE = "memory: usage %llukB, limit %llukB, failcnt %llu\n"

# ---- 4.9-4.18 (and Android 4.4 with their backports) -----------------------------------
# mm/oom_kill.c dump_header(), read from 1582130940/android_kernel_xiaomi_sdm660 (4.4 with
# the 4.9+ dump_header) and 0x88888888/linux-4.19-comments (4.19): the gfp flags in words and
# the nodemask.
HDR_4_9 = "%s invoked oom-killer: gfp_mask=%#x(%pGg), nodemask=%*pbl, order=%d, oom_score_adj=%hd\n"

# ---- 4.19 ------------------------------------------------------------------------------
# mm/oom_kill.c, 4.19, read from 0x88888888/linux-4.19-comments: dump_tasks(),
# oom_kill_process() (`score %u`), __oom_kill_process() (shmem-rss), oom_reap_task_mm().
TASKS_STATE = "Tasks state (memory values in pages):\n"
TASKS_4_19 = "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name\n"
ROW_4_19 = "[%7d] %5d %5d %8lu %8lu %8ld %8lu         %5hd %s\n"
CHOSEN_4_19 = "%s: Kill process %d (%s) score %u or sacrifice child\n"
KILL_4_19 = "Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, shmem-rss:%lukB\n"
REAPED = "oom_reaper: reaped process %d (%s), now anon-rss:%lukB, file-rss:%lukB, shmem-rss:%lukB\n"

# ---- 5.10 / 6.1 ------------------------------------------------------------------------
# mm/oom_kill.c, 5.10 read from AltafYafai/kernel_common_5.10 and 6.1 read from
# 0ctobot/neutrino_kernel_google_caimito (android14-6.1): dump_header() without nodemask,
# dump_oom_summary(), __oom_kill_process() with the message, UID, pgtables and adj. The tasks
# table is 4.19's (TASKS_4_19, ROW_4_19) in both.
HDR_5 = "%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d, oom_score_adj=%hd\n"
# dump_oom_summary(): `oom-kill:constraint=%s,nodemask=%*pbl`, then pr_cont pieces from
# cpuset_print_current_mems_allowed() (`,cpuset=`, `,mems_allowed=%*pbl`) and
# mem_cgroup_print_oom_context() (`,oom_memcg=`, `,task_memcg=`, or `,global_oom`), then
# `,task=%s,pid=%d,uid=%d\n`. The pieces between are joined here as they print.
SUMMARY_5 = "oom-kill:constraint=%s,nodemask=%*pbl,cpuset=%s,mems_allowed=%*pbl%s,task=%s,pid=%d,uid=%d\n"
KILL_5 = (
    "%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, shmem-rss:%lukB, "
    "UID:%u pgtables:%lukB oom_score_adj:%hd\n"
)

# ---- after 6.1 (6.8 and later) ---------------------------------------------------------
# mm/oom_kill.c dump_tasks()/dump_task() after 6.1 (whose table is 4.19's, read above): the rss
# split in three columns, copied from a compiled oom_kill.c's string table (find_string "rss_anon
# rss_file rss_shmem pgtables_bytes"; a 6.12-rc2 report on linux-mm prints it). The release that
# added it was not read here.
TASKS_6_8 = "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name\n"
ROW_6_8 = "[%7d] %5d %5d %8lu %8lu %8lu %8lu %9lu %8ld %8lu         %5hd %s\n"

GFP = 0x140DCA
GFP_WORDS = "GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO"


def _reports() -> list[Report]:
    victim = {"victim": "llama-server", "pid": 31337}
    return [
        Report(
            "2.6.32",
            (
                printk(HDR_2_6_32, "python", 0x201DA, 0, 0),
                printk(TASKS_2_6_32),
                printk(ROW_2_6_32, 31337, 1000, 31337, 1_800_000, 1_700_000, 3, 0, "llama-server"),
                printk(CHOSEN_2_6_32, "Out of memory", 31337, "llama-server", 901_234),
                printk(KILL_2_6_32, 31337, "llama-server"),
            ),
            {**victim, "trigger": "python", "gfp_mask": "0x201da", "order": 0},
            {"total_vm": 1_800_000, "rss": 1_700_000, "oom_adj": 0},
        ),
        Report(
            "2.6.33-2.6.35",
            (
                printk(HDR_2_6_32, "python", 0x201DA, 0, 0),
                printk(KILL_VSZ, 31337, "llama-server", 7_200_000, 6_800_000, 1_024),
            ),
            {
                **victim,
                "trigger": "python",
                "total_vm_kb": 7_200_000,
                "anon_rss_kb": 6_800_000,
                "file_rss_kb": 1_024,
            },
        ),
        Report(
            "RHEL 6",
            (
                printk(HDR_RHEL6, "java", 0x201DA, 0, 0, 0),
                printk(TASKS_RHEL6),
                printk(ROW_RHEL6, 31337, 501, 31337, 1_800_000, 1_700_000, 2, 0, -17, "llama-server"),
                printk(CHOSEN_3_10, "Out of memory", 31337, "llama-server", 978),
                printk(KILL_RHEL6, 31337, 501, "llama-server", 7_200_000, 6_800_000, 1_024),
            ),
            {
                **victim,
                "uid": 501,
                "trigger": "java",
                "total_vm_kb": 7_200_000,
                "anon_rss_kb": 6_800_000,
                "file_rss_kb": 1_024,
                "constraint": "global",
            },
            {"oom_score_adj": -17, "cpu": 2},
        ),
        Report(
            "3.10",
            (
                printk(HDR_3_10, "python", 0x280DA, 0, 0),
                printk(TASKS_3_10),
                printk(ROW_3_10, 31337, 1000, 31337, 1_800_000, 1_700_000, 3_400, 0, 200, "llama-server"),
                printk(CHOSEN_3_10, "Out of memory", 31337, "llama-server", 901),
                printk(KILL_3_10, 31337, "llama-server", 7_200_000, 6_800_000, 1_024),
            ),
            {
                **victim,
                "trigger": "python",
                "gfp_mask": "0x280da",
                "order": 0,
                "total_vm_kb": 7_200_000,
                "anon_rss_kb": 6_800_000,
                "file_rss_kb": 1_024,
                "oom_score_adj": 200,
                "constraint": "global",
            },
            {"nr_ptes": 3_400, "swapents": 0, "oom_score_adj": 200},
        ),
        Report(
            "3.10 memcg",
            (
                printk(HDR_3_10, "python", 0xD0, 0, 0),
                printk(TASK_IN, "/docker/abc", "/docker/abc"),
                printk(MEMCG_USAGE, 1_048_576, 1_048_576, 267),
                printk(TASKS_3_10),
                printk(ROW_3_10, 31337, 1000, 31337, 1_800_000, 262_000, 600, 0, 0, "llama-server"),
                printk(CHOSEN_3_10, "Memory cgroup out of memory", 31337, "llama-server", 990),
                printk(KILL_3_10, 31337, "llama-server", 7_200_000, 1_048_000, 576),
            ),
            {**victim, "constraint": "memcg", "memcg": "/docker/abc", "anon_rss_kb": 1_048_000},
        ),
        Report(
            "4.9-4.19",
            (
                printk(HDR_4_9, "python", GFP, GFP_WORDS, "(null)", 0, 0),
                printk(TASKS_STATE),
                printk(TASKS_4_19),
                printk(ROW_4_19, 31337, 1000, 31337, 1_800_000, 1_700_000, 14_000_000, 0, 0, "llama-server"),
                printk(CHOSEN_4_19, "Out of memory", 31337, "llama-server", 901),
                printk(KILL_4_19, 31337, "llama-server", 7_200_000, 6_800_000, 1_024, 4),
                printk(REAPED, 31337, "llama-server", 0, 0, 4),
            ),
            {
                **victim,
                "trigger": "python",
                "gfp_mask": "0x140dca",
                "total_vm_kb": 7_200_000,
                "anon_rss_kb": 6_800_000,
                "file_rss_kb": 1_024,
                "shmem_rss_kb": 4,
                "constraint": "global",
            },
            {"pgtables_bytes": 14_000_000, "swapents": 0},
        ),
        Report(
            "5.10-6.1",
            (
                printk(HDR_5, "python", GFP, GFP_WORDS, 0, 0),
                printk(TASKS_STATE),
                printk(TASKS_4_19),
                printk(
                    ROW_4_19, 31337, 1000, 31337, 1_800_000, 1_700_000, 14_000_000, 0, 200, "llama-server"
                ),
                printk(
                    SUMMARY_5,
                    "CONSTRAINT_NONE",
                    "(null)",
                    "/",
                    "0",
                    ",global_oom,task_memcg=/user.slice",
                    "llama-server",
                    31337,
                    1000,
                ),
                printk(
                    KILL_5,
                    "Out of memory",
                    31337,
                    "llama-server",
                    7_200_000,
                    6_800_000,
                    1_024,
                    4,
                    1000,
                    13_672,
                    200,
                ),
                printk(REAPED, 31337, "llama-server", 0, 0, 4),
            ),
            {
                **victim,
                "uid": 1000,
                "trigger": "python",
                "gfp_mask": "0x140dca",
                "total_vm_kb": 7_200_000,
                "anon_rss_kb": 6_800_000,
                "file_rss_kb": 1_024,
                "shmem_rss_kb": 4,
                "pgtables_kb": 13_672,
                "oom_score_adj": 200,
                "constraint": "global",
            },
        ),
        Report(
            "5.10-6.1 memcg",
            (
                printk(HDR_5, "python", 0xCC0, "GFP_KERNEL", 0, 0),
                printk(TASKS_STATE),
                printk(TASKS_4_19),
                printk(ROW_4_19, 31337, 1000, 31337, 1_800_000, 262_000, 2_400_000, 0, 0, "llama-server"),
                printk(
                    SUMMARY_5,
                    "CONSTRAINT_MEMCG",
                    "(null)",
                    "/",
                    "0",
                    ",oom_memcg=/kubepods/pod1,task_memcg=/kubepods/pod1/ctr",
                    "llama-server",
                    31337,
                    1000,
                ),
                printk(
                    KILL_5,
                    "Memory cgroup out of memory",
                    31337,
                    "llama-server",
                    7_200_000,
                    1_048_000,
                    576,
                    0,
                    1000,
                    2_344,
                    0,
                ),
            ),
            {
                **victim,
                "constraint": "memcg",
                "memcg": "/kubepods/pod1",
                "pgtables_kb": 2_344,
                "oom_score_adj": 0,
            },
        ),
        Report(
            "6.8",
            (
                printk(HDR_5, "python", GFP, GFP_WORDS, 0, 0),
                printk(TASKS_STATE),
                printk(TASKS_6_8),
                printk(
                    ROW_6_8,
                    31337,
                    1000,
                    31337,
                    1_800_000,
                    1_700_000,
                    1_699_000,
                    1_000,
                    0,
                    14_000_000,
                    0,
                    200,
                    "llama-server",
                ),
                printk(
                    SUMMARY_5,
                    "CONSTRAINT_NONE",
                    "(null)",
                    "/",
                    "0-1",
                    ",global_oom,task_memcg=/user.slice",
                    "llama-server",
                    31337,
                    1000,
                ),
                printk(
                    KILL_5,
                    "Out of memory",
                    31337,
                    "llama-server",
                    7_200_000,
                    6_796_000,
                    4_000,
                    0,
                    1000,
                    13_672,
                    200,
                ),
            ),
            {**victim, "uid": 1000, "anon_rss_kb": 6_796_000, "oom_score_adj": 200, "constraint": "global"},
            {"rss_anon": 1_699_000, "rss_file": 1_000, "rss_shmem": 0, "pgtables_bytes": 14_000_000},
        ),
    ]


_VICTIM = {"uid", "total_vm_kb", "anon_rss_kb", "file_rss_kb", "shmem_rss_kb", "pgtables_kb", "oom_score_adj"}


def _got(episode: dict[str, Any], name: str) -> Any:
    victim = episode.get("victim") or {}
    trigger = episode.get("trigger") or {}
    if name == "victim":
        return victim.get("comm")
    if name == "pid":
        return victim.get("pid")
    if name in _VICTIM:
        return victim.get(name)
    if name == "trigger":
        return trigger.get("comm")
    if name in ("gfp_mask", "order"):
        return trigger.get(name)
    return episode.get(name)


def _episode(tmp_path: Path, lines: tuple[str, ...]) -> dict[str, Any]:
    log = tmp_path / "dmesg.txt"
    log.write_text(_dmesg(lines))
    result = run("list", "-k", str(log), "--format", "json")
    assert result.exit_code == 0, result.output
    episodes = json.loads(result.stdout)["episodes"]
    assert len(episodes) == 1, [e.get("victim") for e in episodes]
    return episodes[0]


@pytest.mark.parametrize("report", _reports(), ids=lambda r: r.series)
def test_every_series_report_reads_back(tmp_path: Path, report: Report) -> None:
    episode = _episode(tmp_path, report.lines)
    assert {name: _got(episode, name) for name in report.facts} == report.facts
    if report.tasks:
        rows = [row for row in episode["tasks"] if row.get("pid") == 31337]
        assert rows, episode["task_columns"]
        assert {k: rows[0].get(k) for k in report.tasks} == report.tasks
    assert episode["uptime_s"] == pytest.approx(5012.104233)


def test_the_reaper_line_reads_back(tmp_path: Path) -> None:
    report = next(r for r in _reports() if r.series == "5.10-6.1")
    reaped = _episode(tmp_path, report.lines)["reaped"]
    assert reaped is not None
    assert (reaped["pid"], reaped["comm"], reaped["anon_rss_kb"], reaped["shmem_rss_kb"]) == (
        31337,
        "llama-server",
        0,
        4,
    )


def test_printk_fills_as_the_kernel_does() -> None:
    assert (
        printk(ROW_3_10, 1, 0, 1, 2, 3, 4, 5, -1000, "x")
        == "[    1]     0     1        2        3       4        5         -1000 x"
    )
    assert printk(HDR_4_9, "a", 0x14200CA, "GFP_HIGHUSER_MOVABLE", "(null)", 0, 0) == (
        "a invoked oom-killer: gfp_mask=0x14200ca(GFP_HIGHUSER_MOVABLE), nodemask=(null), order=0, oom_score_adj=0"
    )


# ---- mm/page_alloc.c: the allocation failure warning ------------------------------------
# warn_alloc_failed(), 2.6.x-4.4: the line before Michal Hocko's linux-mm patch adding the flag
# names (find_string "page allocation failure: order:%u").
ALLOC_FAIL_2_6 = "%s: page allocation failure: order:%u, mode:0x%x\n"
# warn_alloc_failed(), 4.5-4.9, as the linux-mm thread renaming it to warn_alloc quotes it.
ALLOC_FAIL_4_5 = "%s: page allocation failure: order:%u, mode:%#x(%pGg)\n"
# warn_alloc(), 4.10+ (find_string "%pV, mode:%#x(%pGg), nodemask=%*pbl"), its %pV being
# __alloc_pages_slowpath()'s "page allocation failure: order:%u", then the cpuset pieces.
ALLOC_FAIL_4_10 = "%s: %pV, mode:%#x(%pGg), nodemask=%*pbl"


@pytest.mark.parametrize(
    "line",
    [
        printk(ALLOC_FAIL_2_6, "kworker/u8:2", 4, 0x20),
        printk(ALLOC_FAIL_4_5, "kworker/u8:2", 4, 0x2080020, "GFP_ATOMIC"),
        printk(
            ALLOC_FAIL_4_10,
            "kworker/u8:2",
            printk("page allocation failure: order:%u", 4),
            0x40CC0,
            "GFP_KERNEL|__GFP_COMP",
            "(null)",
        )
        + ",cpuset=/,mems_allowed=0",
    ],
    ids=["2.6-4.4", "4.5-4.9", "4.10+"],
)
def test_every_series_allocation_failure_is_a_warning(tmp_path: Path, line: str) -> None:
    log = tmp_path / "dmesg.txt"
    log.write_text(_dmesg((line,)))
    result = run("list", "-k", str(log), "--format", "json")
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["warnings"]
    assert [(w["kind"], w["key"]) for w in warnings] == [("page-allocation-failure", "kworker/u8:2:order4")]
