"""Real OOM reports from peer projects, checked against the facts their maintainers recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dateutil import tz

from oomtrace.analyze import analyze
from oomtrace.model import Episode
from oomtrace.sources.textfile import KernelLogFile
from tests.conftest import CORPUS

CASES = sorted(CORPUS.glob("oomanalyser/**/*.expected.json")) if CORPUS.is_dir() else []
CONSTRAINTS = {"CONSTRAINT_NONE": "global", "CONSTRAINT_MEMCG": "memcg"}


def episodes_of(path: Path) -> tuple[Episode, ...]:
    return analyze([KernelLogFile(str(path), tz.UTC, year=2025)]).episodes


@pytest.mark.parametrize("expected_file", CASES, ids=lambda p: p.name.removesuffix(".expected.json"))
def test_oomanalyser_facts(expected_file: Path, corpus: Path) -> None:
    facts: dict[str, Any] = json.loads(expected_file.read_text())["expected"]
    log = expected_file.with_name(expected_file.name.replace(".expected.json", ".txt"))
    episodes = episodes_of(log)
    assert len(episodes) == facts["oom_blocks"]
    episode = episodes[0]
    assert (not episode.missing) == facts["complete"], episode.missing
    _check_trigger(episode, facts)
    _check_victim(episode, facts)
    _check_tasks(episode, facts)
    _check_memory(episode, facts)


def _check_trigger(episode: Episode, facts: dict[str, Any]) -> None:
    assert episode.kernel == facts.get("kernel_version")
    if facts.get("trigger_proc_name") is None:
        assert episode.trigger is None
        return
    trigger = episode.trigger
    assert trigger is not None
    assert trigger.comm == facts["trigger_proc_name"]
    assert trigger.pid == facts["trigger_proc_pid"]
    for key, attribute in (
        ("gfp_mask", "gfp_mask"),
        ("order", "order"),
        ("trigger_oom_score_adj", "oom_score_adj"),
    ):
        if key in facts:
            assert getattr(trigger, attribute) == facts[key], key
    if facts.get("gfp_flags_printed") is not None:
        assert trigger.gfp_flags == facts["gfp_flags_printed"]


def _check_victim(episode: Episode, facts: dict[str, Any]) -> None:
    if facts.get("killed_proc_pid") is None:
        assert episode.victim is None
        assert "kill" in episode.missing
        return
    victim = episode.victim
    assert victim is not None
    assert (victim.pid, victim.comm) == (facts["killed_proc_pid"], facts["killed_proc_name"])
    for key, attribute in (
        ("killed_total_vm_kb", "total_vm_kb"),
        ("killed_anon_rss_kb", "anon_rss_kb"),
        ("killed_file_rss_kb", "file_rss_kb"),
        ("killed_shmem_rss_kb", "shmem_rss_kb"),
        ("killed_pgtables_kb", "pgtables_kb"),
        ("killed_oom_score_adj", "oom_score_adj"),
    ):
        if facts.get(key) is not None:
            assert getattr(victim, attribute) == facts[key], key
    if "killed_oom_score_adj" in facts and facts["killed_oom_score_adj"] is None:
        assert victim.oom_score_adj is None
    if facts.get("killed_uid") is not None:
        assert victim.uid == facts["killed_uid"]
    if facts.get("killed_proc_score") is not None:
        assert episode.chosen is not None and episode.chosen.score == facts["killed_proc_score"]
    if facts.get("constraint") is not None:
        assert episode.constraint == CONSTRAINTS[facts["constraint"]]
    if facts.get("oom_kind") is not None:
        assert episode.constraint == facts["oom_kind"]
    summary = facts.get("oom_kill_summary_line")
    if summary:
        assert episode.memcg == summary.get("oom_memcg")
        assert episode.task_memcg == summary["task_memcg"]


def _check_tasks(episode: Episode, facts: dict[str, Any]) -> None:
    table = facts.get("tasks_table") or {}
    assert len(episode.tasks) == table.get("rows", 0)
    if not episode.tasks:
        return
    by_pid = {row["pid"]: row for row in episode.tasks}
    assert len(by_pid) == table["unique_pids"]
    assert sum(int(row["rss"]) for row in episode.tasks) == table["sum_rss_pages"]
    expected_row = table["victim_row"]
    row = by_pid[expected_row["pid"]]
    assert (
        row["uid"],
        row["tgid"],
        row["total_vm"],
        row["rss"],
        row["swapents"],
        row["oom_score_adj"],
        row["name"],
    ) == (
        expected_row["uid"],
        expected_row["tgid"],
        expected_row["total_vm_pages"],
        expected_row["rss_pages"],
        expected_row["swapents"],
        expected_row["oom_score_adj"],
        expected_row["name"],
    )
    for pid, name in (table.get("sample_names") or {}).items():
        assert by_pid[int(pid)]["name"] == name


def _check_memory(episode: Episode, facts: dict[str, Any]) -> None:
    memory = facts.get("memory") or {}
    if memory.get("page_size_kb") is not None:
        assert episode.page_size_kb == memory["page_size_kb"]
    if memory.get("ram_pages") is not None:
        assert episode.pages.get("ram") == memory["ram_pages"]
        assert episode.pages.get("reserved") == memory["reserved_pages"]
        assert episode.pages.get("pagecache") == memory["pagecache_pages"]
    swap = facts.get("swap")
    if swap:
        assert (episode.swap_total_kb, episode.swap_free_kb) == (swap["total_kb"], swap["free_kb"])
    elif "swap" in facts and (facts.get("memory") or {}).get("ram_pages") is not None:
        assert episode.swap_total_kb is None
    for mark in facts.get("watermarks") or []:
        zone = next(z for z in episode.zones if (z.node, z.zone) == (mark["node"], mark["zone"]))
        values = {k: zone.values_kb.get(k) for k in ("free", "min", "low", "high")}
        assert values == {k: mark[f"{k}_kb"] for k in ("free", "min", "low", "high")}
    if facts.get("hardware_name") is not None:
        assert episode.hardware == facts["hardware_name"]
    cgroup = facts.get("cgroup")
    if cgroup:
        counter = next(c for c in episode.memcg_usage if c.kind == "memory")
        assert (counter.usage_kb, counter.limit_kb, counter.failcnt) == (
            cgroup["memory"]["usage_kb"],
            cgroup["memory"]["limit_kb"],
            cgroup["memory"]["failcnt"],
        )
        assert episode.memcg_stats_path == cgroup["stats_path"]
        if cgroup.get("memory_swap_v1"):
            swap_counter = next(c for c in episode.memcg_usage if c.kind == "memory+swap")
            assert swap_counter.limit_kb == cgroup["memory_swap_v1"]["limit_kb"]


# cAdvisor's and gpud's captures carry no expected-facts file; these are read off by hand.
PEERS = [
    ("cadvisor_containerOomExampleLog_3.13.txt", [(13536, "memorymonster", "memcg", "/mem2")]),
    ("cadvisor_systemOomExampleLog_3.13.txt", [(1532, "badsysprogram", "global", None)]),
    (
        "cadvisor_test_docker_memcg_oom_4.8.txt",
        [
            (
                1381,
                "gunpowder-memho",
                "memcg",
                "/docker/2e088fe462e25e60be1dafafe2c05c47bda1a97978648d10ad2b7484fc0b8f50",
            ),
            (
                1667,
                "gunpowder-memho",
                "memcg",
                "/docker/6c6fcab8562fd3150854986b78552c732f234fd405b624207b8843528a145e70",
            ),
        ],
    ),
]


@pytest.mark.parametrize(("name", "expected"), PEERS, ids=[p[0] for p in PEERS])
def test_cadvisor_captures(name: str, expected: list[tuple[int, str, str, str | None]], corpus: Path) -> None:
    episodes = episodes_of(corpus / "peers" / name)
    got = [(e.victim.pid, e.victim.comm, e.constraint, e.memcg) for e in episodes if e.victim]
    assert got == expected


def test_cadvisor_reaper_line_is_joined_to_its_kill(corpus: Path) -> None:
    first = episodes_of(corpus / "peers" / "cadvisor_test_docker_memcg_oom_4.8.txt")[0]
    assert first.reaped is not None and first.reaped.pid == 1381


def test_gpud_xid_capture_is_a_warning_not_an_episode(corpus: Path) -> None:
    analysis = analyze(
        [KernelLogFile(str(corpus / "peers" / "gpud_dmesg_nvrm_xid119_gsp_timeout.log"), tz.UTC)]
    )
    assert analysis.episodes == ()
    assert [(w.kind, w.key) for w in analysis.warnings] == [("nvrm-xid", "xid-119")]
