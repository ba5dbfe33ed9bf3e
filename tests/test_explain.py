"""Explanations: the kernel's badness recomputed, gfp flags, call paths, cgroups, memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from dateutil import tz

from oomtrace.allocation import call_path, gfp_flags
from oomtrace.analyze import analyze
from oomtrace.badness import rank
from oomtrace.explain import adj_origin, cgroup_owner, explain_episode, memory_picture, outside_rss_note
from oomtrace.model import Episode, Frame, Trigger
from oomtrace.sources.textfile import KernelLogFile
from tests.conftest import FIXTURES, run
from tests.reshaped import memcg_report


def episodes(path: Path) -> tuple[Episode, ...]:
    return analyze([KernelLogFile(str(path), tz.UTC, year=2026)]).episodes


@pytest.mark.parametrize(
    ("name", "printed"),
    [
        ("oomanalyser/rhel7_3.10.txt", 651),
        ("peers/cadvisor_systemOomExampleLog_3.13.txt", 919),
        ("peers/cadvisor_test_docker_memcg_oom_4.8.txt", 1046),
    ],
)
def test_recomputed_badness_matches_the_score_old_kernels_printed(
    corpus: Path, name: str, printed: int
) -> None:
    ranking = rank(episodes(corpus / name)[0])
    assert ranking is not None
    assert ranking.printed_score == printed
    assert ranking.recomputed_score == printed
    assert ranking.victim_rank == 1


def test_memcg_with_unknown_swap_is_not_given_a_made_up_score(corpus: Path) -> None:
    # memory+swap unlimited and 32 GiB swapped out, but a memcg report never prints the swap size.
    ranking = rank(episodes(corpus / "peers" / "cadvisor_containerOomExampleLog_3.13.txt")[0])
    assert ranking is not None
    assert ranking.total_pages is None and ranking.recomputed_score is None
    assert ranking.printed_score == 996 and ranking.victim_rank == 1


def test_adj_decided_the_victim() -> None:
    ds4 = episodes(FIXTURES / "seed002_ds4_server_gb10" / "kernel.log")[0]
    ranking = rank(ds4)
    assert ranking is not None and ranking.victim is not None
    assert ranking.victim.name == "ds4-server" and ranking.victim_rank == 1
    assert ranking.top_without_adj is not None and ranking.top_without_adj.name == "plasmashell"
    reason = explain_episode(ds4).reason
    assert reason is not None and "without oom_score_adj 1000, plasmashell (pid 2990" in reason


def test_a_child_killed_in_place_of_its_parent_is_said() -> None:
    (java,) = episodes(FIXTURES / "rhel6_2.6.32_messages" / "kernel.log")
    reason = explain_episode(java).reason
    assert (
        reason is not None
        and "chose java (pid 4410, score 978) and killed its child java (pid 4417)" in reason
    )


@pytest.mark.parametrize(
    ("mask", "kernel", "expected"),
    [
        ("0x201da", "3.10.0-514.el7.x86_64", "GFP_HIGHUSER_MOVABLE|__GFP_COLD"),
        ("0x280da", "3.13.0-27-generic", "GFP_HIGHUSER_MOVABLE|__GFP_ZERO"),
        ("0xd0", "3.13.0-43-generic", "GFP_KERNEL"),
        ("0x201da", "5.15.0", None),  # newer kernels print their own flags; the old layout no longer holds
    ],
)
def test_old_gfp_masks_are_decoded(mask: str, kernel: str, expected: str | None) -> None:
    trigger = Trigger("x", 1, 0, mask, None, 0, 0, None, None)
    assert gfp_flags(trigger, kernel) == expected


def test_call_paths() -> None:
    nvidia = (
        Frame("dump_stack_lvl", None, True),
        Frame("warn_alloc", None, True),
        Frame("__kmalloc_noprof", None, True),
        Frame("os_alloc_mem", "nvidia", True),
    )
    assert call_path(nvidia) == "the nvidia driver: __kmalloc_noprof ← os_alloc_mem [nvidia]"
    memcg = (
        Frame("mem_cgroup_out_of_memory", None, True),
        Frame("pagefault_out_of_memory", None, True),
        Frame("mm_fault_error", None, True),
    )
    assert call_path(memcg) is not None and call_path(memcg).startswith("the end of a page fault")  # type: ignore[union-attr]
    assert call_path(()) is None


@pytest.mark.parametrize(
    ("path", "owner"),
    [
        ("/system.slice/ollama.service", "unit ollama.service"),
        ("/user.slice/user-1000.slice/session-3.scope", "login session 3"),
        (
            "/user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope",
            "unit app-x.scope of the user manager user@1000.service",
        ),
        (
            "/docker/2e088fe462e25e60be1dafafe2c05c47bda1a97978648d10ad2b7484fc0b8f50",
            "container 2e088fe462e2",
        ),
        (
            "/system.slice/docker-a59e4e7d3090c04c6ce5a4b7a8bc85228eb9b96ac00b1284643a8c7c11dda661.scope",
            "container a59e4e7d3090",
        ),
        (
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234abcd_5678_90ab_cdef_1234567890ab.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope",
            "container 0123456789ab in Kubernetes pod 1234abcd-5678-90ab-cdef-1234567890ab",
        ),
        ("/lxc/39004", "LXC container 39004"),
        ("/oomprobe", None),
        (None, None),
    ],
)
def test_cgroup_owner(path: str | None, owner: str | None) -> None:
    assert cgroup_owner(path) == owner


def test_adj_origins() -> None:
    assert "DefaultOOMScoreAdjust" in (
        adj_origin(200, "/user.slice/user-1000.slice/user@1000.service/x.scope") or ""
    )
    assert "its cgroup is under user@" in (
        adj_origin(200, "/user.slice/user-1000.slice/user@1000.service/x.scope") or ""
    )
    assert "asked to be killed first" in (adj_origin(1000) or "")
    assert "unkillable" in (adj_origin(-1000) or "")
    assert adj_origin(0) is None


def test_unified_memory_picture_of_seed000() -> None:
    (episode,) = episodes(FIXTURES / "seed000_llama_server_gb10" / "kernel.log")
    memory = memory_picture(episode)
    assert memory is not None and memory.unaccounted_kb is not None
    assert 85 * 1024 * 1024 < memory.unaccounted_kb < 88 * 1024 * 1024
    assert any("most likely CUDA allocations" in note for note in memory.notes)
    assert any("nothing was left to reclaim" in note for note in memory.notes)
    assert "unified memory" in (outside_rss_note(episode.victim) or "")


def test_memcg_picture_says_the_cgroup_was_at_its_limit() -> None:
    (episode,) = episodes(FIXTURES / "real_memcg_v1_6.18" / "kernel.log")
    memory = memory_picture(episode)
    assert memory is not None and memory.memcg_limit_kb == 65536
    assert any("at its limit" in note for note in memory.notes)


def test_failcnt_is_said_as_the_cgroups_count_since_it_was_made_and_its_change(tmp_path: Path) -> None:
    """The CI machine's memcg v1 report says `failcnt 240`: the cgroup's lifetime count, which a
    second report of the same cgroup (failcnt 251) turns into 11 hits between the two."""
    log = tmp_path / "kernel.log"
    log.write_text(
        "\n".join([*memcg_report(100.0, failcnt=240), *memcg_report(160.5, pid=2111, failcnt=251)]) + "\n"
    )
    first, second = episodes(log)
    (note,) = [n for n in memory_picture(first).notes if "failcnt" in n]  # type: ignore[union-attr]
    assert note.endswith("(failcnt 240: the times it hit the limit since the cgroup was made)")
    picture = memory_picture(second, first)
    assert picture is not None and (picture.memcg_failcnt, picture.memcg_failcnt_before) == (251, 240)
    (note,) = [n for n in picture.notes if "failcnt" in n]
    assert "; 11 since its report at uptime 100." in note
    # A count lower than the report before: the cgroup was made anew, never a negative change.
    (note,) = [n for n in memory_picture(first, second).notes if "failcnt" in n]  # type: ignore[union-attr]
    assert "so the cgroup was made anew" in note and "-11" not in note


def test_a_table_of_one_task_says_the_only_one() -> None:
    """Counts agree with their noun: "the only killable task", never "the 1 killable tasks"."""
    # The real cgroup v1 kill: its tasks table holds the victim alone.
    text = " ".join(
        run("why", "oomprobe-hog", "-k", str(FIXTURES / "real_memcg_v1_6.18" / "kernel.log")).stdout.split()
    )
    assert "the only killable task in the report" in text
    assert "the 1 killable" not in text and "of 1 killable" not in text


def _cut_before_the_tasks_header(tmp_path: Path) -> Path:
    """seed000 with its report cut after the NVRM lines: the header, Mem-Info, the tasks table's
    header and its first three rows are gone (a ring buffer that wrapped, a paste begun late)."""
    lines = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_text().splitlines(keepends=True)
    assert "[  pid  ]" in lines[60] and "] " in lines[63]
    cut = tmp_path / "cut.log"
    cut.write_text("".join(lines[:6] + lines[64:]))
    return cut


def test_a_table_cut_before_its_header_is_ranked_only_among_the_rows_the_log_holds(tmp_path: Path) -> None:
    """Ten numbers after `[pid]` are 6.x's columns alone: the rows are named by that layout and
    ranked, but only among the rows the log holds, never "of N" as if the table were whole."""
    (episode,) = episodes(_cut_before_the_tasks_header(tmp_path))
    assert "tasks_header" in episode.missing
    assert episode.task_columns[4:7] == ("rss", "rss_anon", "rss_file")
    text = " ".join(
        run("why", "llama-server", "-k", str(_cut_before_the_tasks_header(tmp_path))).stdout.split()
    )
    assert "highest badness of the 9 killable tasks in the rows of the tasks table the log holds" in text
    assert "killable tasks in the report" not in text
    assert (
        "the tasks table's header (and any rows before the cut; the columns were named by their count)"
        in text
    )
    assert "llama-server 1966928 30.2 GiB 200" in text  # its rss, read from the rss column


def test_a_table_cut_before_its_header_of_an_ambiguous_layout_is_not_ranked() -> None:
    """Seven numbers are 3.x's, 4.15-6.0's or RHEL 6's columns: which is the rss is not known, so
    no rank, no "only killable task" and no holders (the old reading said "ranked 1 of 1" and
    listed the victim at 0 KiB). A real paste: a `dmesg -T` tail of a GPU box, rows wrapped."""
    path = Path(__file__).parent / "realworld" / "cases" / "gpu-autovod-dmesg-T-commas" / "input.txt"
    (episode,) = episodes(path)
    assert "tasks_header" in episode.missing and episode.task_columns == ("pid",)
    assert rank(episode) is None
    text = " ".join(run("report", "-k", str(path)).stdout.split())
    assert (
        "Why it not known: the tasks table lacks its header, and the count of numbers in its rows does "
        "not tell which kernel's columns they are, so its tasks cannot be ranked by badness"
    ) in text
    assert "without it the columns cannot be named" in text
    for false in ("Largest processes", "highest badness", "ranked 1", "only killable", "0 KiB resident"):
        assert false not in text
    # Its kill line's anon-rss is mangled (`153,700,88kB`): the resident set is not known, not 0.
    assert "anon-rss ?" in text and "Outside RSS" not in text


def test_cut_tables_of_real_pastes_are_named_by_their_count() -> None:
    """A 4.x table (8 numbers) and a 6.x one (10) in real pastes cut before their headers."""
    cases = Path(__file__).parent / "realworld" / "cases"
    # The kill, then the next report's header (procd's, cut): two reports, the kill's first.
    lede, procd = episodes(cases / "forum-lede-k2t-logread-cut-invoked" / "input.txt")
    assert lede.trigger is None and procd.victim is None
    assert procd.trigger is not None and procd.trigger.comm == "procd"
    assert lede.task_columns[5:7] == ("nr_ptes", "nr_pmds")
    (nixos,) = episodes(cases / "forum-nixos-journal-summary-truncated" / "input.txt")
    assert "rss_anon" in nixos.task_columns
    text = " ".join(
        run(
            "why", "nix-env", "-k", str(cases / "forum-nixos-journal-summary-truncated" / "input.txt")
        ).stdout.split()
    )
    assert "nix-env 1055041 4.8 GiB 200" in text
