"""Kills told by a record other than the kernel's report: Android's killers in every wording,
and a container runtime's record of an OOM kill (issue 38), read off real pastes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run
from tests.realworld.score import _actual

CASES = Path(__file__).parent / "realworld" / "cases"


def episodes_of(case: str, *extra: str) -> list[dict]:
    result = run("list", "-k", str(CASES / case / "input.txt"), "--format", "json", "--tz", "UTC", *extra)
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout)["episodes"])


def facts(episode: dict, *names: str) -> dict:
    return {name: _actual(episode, name) for name in names}


def test_oreo_lmkd_killing_two_lines_is_one_kill_each_and_activity_manager_is_no_kill() -> None:
    # Android 8's lmkd: `Killing '...' (pid), uid N, adj N` then `   to free NkB because ...`,
    # each with its own logcat prefix; ActivityManager's `has died` lines follow each kill.
    episodes = episodes_of("user2-android-lmkd-oreo-killing-two-line-am-died")
    assert [
        facts(e, "killer", "victim", "pid", "trigger", "trigger_pid", "oom_score_adj") for e in episodes
    ] == [
        {
            "killer": "lmkd",
            "victim": "com.android.documentsui",
            "pid": 4563,
            "trigger": "lmkd",
            "trigger_pid": 400,
            "oom_score_adj": 906,
        },
        {
            "killer": "lmkd",
            "victim": "com.android.keychain",
            "pid": 4577,
            "trigger": "lmkd",
            "trigger_pid": 400,
            "oom_score_adj": 904,
        },
    ]
    # The second line is joined to the first: its `to free` is the kill's, not a kill of its own.
    assert [e["victim"]["rss_kb"] for e in episodes] == [39444, 32948]
    assert all("to free" in e["killer_reason"] for e in episodes)


def test_qualcomm_lowmemorykiller_tgid_and_kmsg_escaped_newlines() -> None:
    (episode,) = episodes_of("user2-android-vince-lmk-x0a-escaped")
    assert facts(episode, "killer", "victim", "pid", "trigger", "trigger_pid", "oom_score_adj") == {
        "killer": "lowmemorykiller",
        "victim": "d.process.media",
        "pid": 2846,
        "trigger": "kswapd0",
        "trigger_pid": 136,
        "oom_score_adj": 999,
    }


def test_logcat_behind_a_collectors_token_keeps_lmkds_pid() -> None:
    (episode,) = episodes_of("user2-android-lmkd-aaos-prefixed-masked-name")
    assert facts(episode, "killer", "trigger", "trigger_pid", "clock") == {
        "killer": "lmkd",
        "trigger": "lmkd",
        "trigger_pid": 326,
        "clock": "14:53:54",
    }
