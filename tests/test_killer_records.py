"""Kills told by a record other than the kernel's report: Android's killers in every wording,
and a container runtime's record of an OOM kill (issue 38), read off real pastes."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

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


RUNTIME_CASES = {
    "user2-k8s-cgroupoom-event-victim-process-pid": 1,
    "user2-k8s-describe-node-systemoom-x3-no-victim": 3,
    # `12m (x4 over 25m)`: the kubelet folded four events into one row.
    "user2-k3s-describe-node-systemoom-x4-over": 4,
    "user2-k8s-describe-last-state-oomkilled-only": 1,
    "user2-k8s-kubelet-status-json-oom-killed-2014": 1,
    "user2-k8s-kubelet-journal-oom-event-cut-json-error": 1,
    "user2-containerd-taskoom-dollar-prefixed-journal": 1,
    "user2-docker-events-container-oom-wrapped-cut": 2,
}


def test_a_container_runtimes_record_is_a_kill_with_no_kernel_details() -> None:
    for case, kills in RUNTIME_CASES.items():
        episodes = episodes_of(case)
        assert [e["killer"] for e in episodes] == ["container-runtime"] * kills, case
        for episode in episodes:
            assert episode["trigger"] is None, case  # the runtime names no allocating task
            assert episode["constraint"] is None, case
            assert "runtime_report" in episode["missing"], case


def test_the_kubelets_cgroup_oom_event_names_its_victim_process() -> None:
    (episode,) = episodes_of("user2-k8s-cgroupoom-event-victim-process-pid")
    assert facts(episode, "victim", "pid") == {"victim": "stress", "pid": 470521}


def test_docker_events_name_the_container_from_its_wrapped_attributes() -> None:
    first, second = episodes_of("user2-docker-events-container-oom-wrapped-cut")
    assert (
        first["victim"]["comm"]
        == "k8s_notebook_jupyter-******_jhub-prod_efa75591-6e89-11e9-bf85-001a4a16016d_0"
    )
    assert first["victim"]["pid"] is None
    assert second["victim"] is None  # cut before its name: no name said


def test_the_story_of_a_runtime_record_says_what_to_fetch_and_not_that_the_runtime_killed() -> None:
    log = CASES / "user2-k8s-cgroupoom-event-victim-process-pid" / "input.txt"
    result = run("why", "stress", "-k", str(log), "--tz", "UTC", "--format", "markdown")
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "by the container runtime's record" in text
    assert "journalctl -k" in text
    assert "userspace OOM killer" not in text
    assert "container-runtime killed" not in text
    assert "pid None" not in text


def test_docker_inspects_oomkilled_false_is_no_kill(tmp_path: Path) -> None:
    # Every container `docker inspect` shows carries the key; only `true` is a kill.
    log = tmp_path / "inspect.txt"
    log.write_text('        "State": {\n            "OOMKilled": false,\n            "ExitCode": 0,\n')
    result = run("list", "-k", str(log), "--format", "json")
    assert result.exit_code != 0 or json.loads(result.stdout)["episodes"] == []
    log.write_text('        "State": {\n            "OOMKilled": true,\n            "ExitCode": 137,\n')
    result = run("list", "-k", str(log), "--format", "json")
    assert [e["killer"] for e in json.loads(result.stdout)["episodes"]] == ["container-runtime"]


def test_a_programs_own_log_given_as_a_kernel_log_is_told_where_it_belongs(tmp_path: Path) -> None:
    # The vLLM fixture's own error line, as a traceback prints it (no log prefix).
    server = (
        Path(__file__).parent.parent / "fixtures" / "vllm_cuda_oom_self_report" / "server.log"
    ).read_text()
    error = next(line for line in server.splitlines() if "CUDA out of memory" in line)
    log = tmp_path / "train.log"
    log.write_text("Traceback (most recent call last):\n" + error[error.index("torch.") :] + "\n")
    result = run("list", "-k", str(log))
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert "does not look like a kernel log" in message
    assert "'torch.OutOfMemoryError: CUDA out of memory' at line 2" in message
    assert "--server-log" in message
    # A log of no program error keeps the plain refusal.
    log.write_text("hello\nworld\n")
    result = run("list", "-k", str(log))
    assert result.exit_code == 2 and "--server-log" not in result.stderr


def test_a_containers_finished_line_is_the_time_of_its_oomkilled_reason() -> None:
    # kubectl describe: `Reason: OOMKilled`, then Exit Code, Started, Finished (the kill's time).
    for case, when in (
        ("user2-k8s-describe-last-state-oomkilled-only", "2023-09-15T07:56:17+00:00"),
        ("rt-k8s-describe-state-oomkilled-finished", "2025-04-29T06:10:51+00:00"),
        ("user2-k8s-kubelet-status-json-oom-killed-2014", "2014-12-18T23:22:26+00:00"),
    ):
        (episode,) = episodes_of(case)
        # The instant, in the offset the status printed.
        assert datetime.fromisoformat(episode["time"]) == datetime.fromisoformat(when), case
        if case != "user2-k8s-kubelet-status-json-oom-killed-2014":  # it names its container
            assert episode["victim"] is None, case  # no process, and no container name, is said


def test_containerds_own_time_gives_the_year_its_journal_prefix_lacks() -> None:
    (episode,) = episodes_of("user2-containerd-taskoom-dollar-prefixed-journal")
    assert episode["time"] == "2023-09-01T19:12:33.012922+00:00"


def test_another_containers_finished_line_is_never_this_kills_time(tmp_path: Path) -> None:
    # The first container's Last State is cut after its Reason; the next container's block ends
    # with a Finished line a dozen lines below: that is not when the first was killed.
    real = (CASES / "rt-k8s-describe-state-oomkilled-finished" / "input.txt").read_text().splitlines()
    filler = [f"    Line {n}:  x" for n in range(10)]
    log = tmp_path / "describe.txt"
    log.write_text(
        "\n".join([real[1], real[2], *filler, real[1], "  Reason:       Completed", *real[3:6]]) + "\n"
    )
    (episode,) = episodes_of_file(log)
    assert episode["time"] is None
    # A Finished line above the Reason is an earlier state's, not this one's.
    log.write_text("\n".join([real[5], real[1], real[2], real[3]]) + "\n")
    (episode,) = episodes_of_file(log)
    assert episode["time"] is None
    # Docker's `0001-01-01T00:00:00Z` is a container that never ended: no time.
    log.write_text('"OOMKilled": true,\n"FinishedAt": "0001-01-01T00:00:00Z"\n')
    (episode,) = episodes_of_file(log)
    assert episode["time"] is None


def episodes_of_file(log: Path) -> list[dict]:
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout)["episodes"])


def test_activity_managers_has_died_is_told_as_a_witness_of_lmkds_kill_never_a_kill() -> None:
    log = CASES / "user2-android-lmkd-oreo-killing-two-line-am-died" / "input.txt"
    result = run("why", "com.android.documentsui", "-k", str(log), "--tz", "UTC", "--format", "markdown")
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "ActivityManager saw com.android.documentsui (pid 4563) die (cch+6CEM)" in text
    assert "0.064s after the kill" in text
    # The keychain's death is its own kill's witness, not the documentsui kill's.
    assert "ActivityManager saw com.android.keychain" not in text.split("Timeline")[0]
    assert "ActivityManager killed" not in text
    assert len(episodes_of("user2-android-lmkd-oreo-killing-two-line-am-died")) == 2


def test_a_has_died_with_no_lmkd_kill_of_its_pid_is_no_kill(tmp_path: Path) -> None:
    lines = (
        (CASES / "user2-android-lmkd-oreo-killing-two-line-am-died" / "input.txt").read_text().splitlines()
    )
    died = [line for line in lines if "has died" in line]
    log = tmp_path / "logcat.txt"
    log.write_text("\n".join(died) + "\n")
    result = run("list", "-k", str(log), "--format", "json")
    assert result.exit_code != 0 or json.loads(result.stdout)["episodes"] == []
    # Beside an lmkd kill of another pid, it witnesses nothing.
    kill = next(line for line in lines if "Killing 'com.android.keychain'" in line)
    log.write_text("\n".join([kill, died[0]]) + "\n")
    result = run("why", "com.android.keychain", "-k", str(log), "--tz", "UTC", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert "ActivityManager saw" not in result.stdout


def test_a_container_named_by_dockers_event_is_not_told_as_a_process() -> None:
    """Docker's `container oom` event names the container, not the process the kernel killed:
    the story said "k8s_notebook_… (pid not in the log) was killed", a container's name in a
    process's place. It says a process of that container, its own name and pid not in the log."""
    from tests.conftest import ROOT, run

    case = (
        ROOT / "tests" / "realworld" / "cases" / "user2-docker-events-container-oom-wrapped-cut" / "input.txt"
    )
    name = "k8s_notebook_jupyter-******_jhub-prod_efa75591-6e89-11e9-bf85-001a4a16016d_0"
    said = " ".join(run("why", name, "-k", str(case), "--format", "markdown").stdout.split())
    assert f"a process of container {name} (its name and pid not in the log) was killed" in said.replace(
        "\\", ""
    )
    assert f"{name} (pid not in the log)" not in said


def _said(log: Path, name: str) -> str:
    result = run("why", name, "-k", str(log), "--tz", "UTC", "--format", "markdown")
    assert result.exit_code == 0, result.output
    return " ".join(result.stdout.replace("\\", "").split())


def test_the_kubelets_json_status_names_its_container_by_the_key_above_its_reason() -> None:
    """Issue 38: `"oom-test": {` holds the `"state"` whose `"termination"` says `"reason": "OOM
    Killed"`: the container is oom-test, told as a container's name, never as a process's."""
    log = CASES / "user2-k8s-kubelet-status-json-oom-killed-2014" / "input.txt"
    (episode,) = episodes_of_file(log)
    assert episode["victim"]["comm"] == "oom-test"
    assert episode["victim"]["pid"] is None
    assert episode["victim"]["comm_from"] == "the container runtime's record (a container's name)"
    said = _said(log, "oom-test")
    assert "a process of container oom-test (its name and pid not in the log) was killed" in said
    assert "oom-test (pid not in the log)" not in said


# The real lines of kubernetes/kubernetes#131530 (tests/realworld/cases/rt-k8s-describe-state-
# oomkilled-finished) and of kubeshark/docs' pod status; arranged here into the blocks they come
# from (a property of the look-back, not a paste).
_DESCRIBE = (CASES / "rt-k8s-describe-state-oomkilled-finished" / "input.txt").read_text().splitlines()[1:8]


def _indented(lines: list[str], by: int) -> list[str]:
    return [" " * by + line for line in lines]


def test_kubectl_describes_heading_names_the_container_of_its_state(tmp_path: Path) -> None:
    log = tmp_path / "describe.txt"
    block = [
        "Containers:",
        "  web:",
        "    Container ID:   containerd://4bcba7fc4369",
        "    Image:          nginx",
    ]
    log.write_text("\n".join([*block, *_indented(_DESCRIBE, 4)]) + "\n")
    (episode,) = episodes_of_file(log)
    assert (episode["victim"]["comm"], episode["victim"]["comm_from"]) == (
        "web",
        "the container runtime's record (a container's name)",
    )
    assert episode["time"] == "2025-04-29T14:10:51+08:00"
    assert "a process of container web (its name and pid not in the log)" in _said(log, "web")


def test_no_name_from_another_containers_block_or_a_line_that_is_no_heading(tmp_path: Path) -> None:
    log = tmp_path / "describe.txt"
    # The State line at the heading's own indent: the line above is the previous container's.
    log.write_text(
        "\n".join(["Containers:", "  db:", "    Image:  postgres", *_indented(_DESCRIBE, 2)]) + "\n"
    )
    (episode,) = episodes_of_file(log)
    assert episode["victim"] is None
    # A line less indented that is no `name:` heading (a note, a key with a value) names nothing.
    for above in ("  Web server, restarted:", "  Node:  worker-1", "Containers:"):
        log.write_text("\n".join([above, "    Image:  nginx", *_indented(_DESCRIBE, 4)]) + "\n")
        (episode,) = episodes_of_file(log)
        assert episode["victim"] is None, above
    # Too far above (past the bound): nothing said rather than a guess.
    args = [f"      --flag-{n}" for n in range(30)]
    log.write_text("\n".join(["  web:", "    Args:", *args, *_indented(_DESCRIBE, 4)]) + "\n")
    (episode,) = episodes_of_file(log)
    assert episode["victim"] is None


_STATUS = """\
                    "containerStatuses": [
                        {
                            "containerID": "docker://a679663ef486d6dc6f24e8157685eb561d26707193924555af537a158a34ec03",
                            "image": "kubeshark/worker:latest",
                            "lastState": {
                                "terminated": {
                                    "exitCode": 137,
                                    "finishedAt": "2023-05-06T21:03:57Z",
                                    "reason": "Error",
                                    "startedAt": "2023-05-06T16:54:42Z"
                                }
                            },
                            "name": "kubeshark-worker",
                            "ready": false,
                            "restartCount": 1,
                            "started": false,
                            "state": {
                                "terminated": {
                                    "containerID": "docker://9821ba51c94d",
                                    "exitCode": 137,
                                    "finishedAt": "2023-05-06T21:08:01Z",
                                    "reason": "OOMKilled",
                                    "startedAt": "2023-05-06T21:03:58Z"
                                }
                            }
                        }
                    ],
"""


def test_kubectls_json_status_names_its_container_and_its_finished_at_above_the_reason(
    tmp_path: Path,
) -> None:
    log = tmp_path / "pod.json"
    log.write_text(_STATUS)
    (episode,) = episodes_of_file(log)
    assert episode["victim"]["comm"] == "kubeshark-worker"
    # `finishedAt` above `reason` in the same `terminated` object; never the lastState's.
    assert episode["time"] == "2023-05-06T21:08:01+00:00"


def test_a_last_state_names_its_container_from_below_never_the_element_above(tmp_path: Path) -> None:
    # lastState prints before `"name"`: the name is below, and the `"name"` above is the
    # previous element's (another container).
    lines = _STATUS.splitlines()
    last = [line.replace('"Error"', '"OOMKilled"') for line in lines[:13]]
    other = ['                            "name": "sidecar",', "                        },"]
    log = tmp_path / "pod.json"
    log.write_text("\n".join([lines[0], "                        {", *other, *last[1:]]) + "\n")
    (episode,) = episodes_of_file(log)
    assert episode["victim"]["comm"] == "kubeshark-worker"
    assert episode["time"] == "2023-05-06T21:03:57+00:00"  # its own finishedAt, above it
    # Without its own `"name"` below (the element ends, the next begins), nothing is said.
    log.write_text(
        "\n".join([lines[0], "                        {", *other, *last[1:12], "}, {", *other]) + "\n"
    )
    (episode,) = episodes_of_file(log)
    assert episode["victim"] is None
    # A finishedAt in another object above (the lastState's), with none in the reason's own: no time.
    log.write_text(
        _STATUS.replace('                                    "finishedAt": "2023-05-06T21:08:01Z",\n', "")
    )
    (episode,) = episodes_of_file(log)
    assert episode["time"] is None
    assert episode["victim"]["comm"] == "kubeshark-worker"


def test_the_chunk_scan_reads_a_status_name_and_end_as_a_full_read_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big file or standard input is scanned in chunks, its lines without an anchor skipped:
    the lines above a status's reason (its name, a finishedAt) and those down to its Finished
    are read all the same, behind noise as in a paste."""
    from oomtrace.sources import bigfile
    from tests.test_fastpath import listing

    monkeypatch.setattr(bigfile, "HEAD_LINES", 2)
    noise = [f"usb 1-1.{n}: new high-speed USB device number {n} using xhci_hcd" for n in range(40)]
    describe = ["Containers:", "  web:", "    Image:          nginx", *_indented(_DESCRIBE, 4)]
    for name, lines, victim in (
        ("describe.txt", [*noise, *describe, *noise], "web"),
        ("pod.json", [*noise, *_STATUS.splitlines(), *noise], "kubeshark-worker"),
    ):
        log = tmp_path / name
        log.write_text("\n".join(lines) + "\n")
        fast, full = listing(log, True, monkeypatch), listing(log, False, monkeypatch)
        assert fast["episodes"] == full["episodes"], name
        (episode,) = full["episodes"]
        assert episode["victim"]["comm"] == victim
        assert episode["time"] is not None


_OOMD_248 = (
    "Mar 29 01:08:45 fedora systemd-oomd[1003]: Memory pressure for /user.slice/user-1000.slice/user@1000.service "
    "is greater than 10 for more than 10 seconds and there was reclaim activity\n"
)


def test_systemd_oomd_248s_decision_is_a_kill_whose_victim_it_does_not_name() -> None:
    # systemd 248-rc4 logs the decision and then acts, naming no victim (systemd#19142's podman
    # container).
    (episode,) = episodes_of("user2-oomd-v248-greater-than-10-podman-died")
    assert facts(episode, "killer", "trigger", "trigger_pid", "clock") == {
        "killer": "systemd-oomd",
        "trigger": "systemd-oomd",
        "trigger_pid": 1003,
        "clock": "01:08:45",
    }
    # The cgroup under pressure is not the victim: oomd kills one of its descendants.
    assert episode["victim"] is None and episode["unit"] is None and episode["task_memcg"] is None
    case = str(CASES / "user2-oomd-v248-greater-than-10-podman-died" / "input.txt")
    listed = run("list", "-k", case, "--tz", "UTC")
    assert "(not named)" in listed.stdout and "(no kill line)" not in listed.stdout
    told = " ".join(run("report", "-k", case, "--tz", "UTC").stdout.split())
    assert "1 incident(s), 1 kill(s)" in told
    assert "an unnamed victim (systemd-oomd's record names none) was killed by" in told


@pytest.mark.parametrize(
    "after",
    [
        "Mar 29 01:08:45 fedora systemd-oomd[1003]: Failed to kill any cgroup(s) under "
        "/user.slice/user-1000.slice/user@1000.service based on pressure\n",
        "Mar 29 01:08:45 fedora systemd-oomd[1003]: oomd dry-run: Would have tried to kill "
        "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope with recurse=true\n",
    ],
    ids=["failed", "dry run"],
)
def test_a_decision_oomd_says_it_did_not_carry_out_is_no_kill(after: str, tmp_path: Path) -> None:
    # With nothing eligible, 248 repeats the decision and its failure every second: no kill each time.
    log = tmp_path / "oomd.log"
    noise = "Mar 29 01:08:45 fedora gnome-shell[2300]: Window manager warning: something\n"
    log.write_text((_OOMD_248 + noise * 3 + after) * 5)
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC", "--year", "2021")
    assert json.loads(result.stdout)["episodes"] == []


def test_a_decision_stands_when_no_failure_follows_within_its_lines(tmp_path: Path) -> None:
    # A failure far below, or another host's, is not this decision's.
    from oomtrace.episodes.decisions import DECISION_LINES

    noise = "Mar 29 01:08:46 fedora gnome-shell[2300]: Window manager warning: something\n"
    failed = "Mar 29 01:08:47 {host} systemd-oomd[1003]: Failed to kill any cgroup(s) based on swap\n"
    swap = "Mar 29 01:08:50 fedora systemd-oomd[1003]: Swap used (8589930496) / total (8589930496) is more than 90%\n"
    log = tmp_path / "oomd.log"
    log.write_text(
        _OOMD_248 + noise * DECISION_LINES + failed.format(host="fedora") + swap + failed.format(host="other")
    )
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC", "--year", "2021")
    episodes = json.loads(result.stdout)["episodes"]
    assert [(e["killer"], e["time"][11:19]) for e in episodes] == [
        ("systemd-oomd", "01:08:45"),
        ("systemd-oomd", "01:08:50"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        # Later versions print the decision at debug level in other words, then their `Killed` line.
        "Memory pressure for /user.slice/user-1000.slice/user@1000.service is 71.23% > 50.00% for > 20s "
        "with reclaim activity",
        "Swap used (8589930496) / total (8589930496) is more than 90.00%",
    ],
    ids=["pressure", "swap"],
)
def test_later_oomds_debug_decisions_are_no_kill_of_their_own(line: str, tmp_path: Path) -> None:
    log = tmp_path / "oomd.log"
    log.write_text(f"Mar 29 01:08:45 fedora systemd-oomd[1003]: {line}\n")
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC", "--year", "2021")
    assert json.loads(result.stdout)["episodes"] == []


def test_report_tells_kills_whose_record_names_no_victim_never_no_kills() -> None:
    # Three SystemOOM events name no process: report said "0 kill(s)" and "No OOM kills in this range".
    case = str(CASES / "user2-k8s-describe-node-systemoom-x3-no-victim" / "input.txt")
    for form in ("text", "markdown"):
        told = " ".join(run("report", "-k", case, "--tz", "UTC", "-f", form).stdout.split())
        assert "3 incident(s), 3 kill(s)" in told
        assert "No OOM kills" not in told and "0 kill(s)" not in told
        assert "an unnamed victim (container-runtime's record names none)" in told


def test_systemctl_status_active_line_is_the_units_oom_kill_at_its_since_time() -> None:
    # The pager cut every journal line below it (`A process of this un>`): only `Active:` says it.
    (episode,) = episodes_of("user-systemctl-status-pager-truncated")
    assert (episode["killer"], episode["unit"]) == ("systemd", "highload-stress-test.service")
    assert episode["time"] == "2025-10-04T21:13:58+00:00"  # the status's own year, not a guess


def test_a_status_and_its_journal_excerpt_below_are_one_death() -> None:
    (episode,) = episodes_of("user-systemctl-status-oom-kill-transient")
    assert episode["unit"] == "highload-stress-test.service"
    # Told from the excerpt's records (its host, its line), the status joined to them.
    assert (episode["host"], episode["lines"]) == ("test-vm", [18, 18])
    assert [n["text"][:8] for n in episode["unit_records"]] == ["highload", "highload", "Active: "]


_UNIT_STATUS = """\
● ollama.service - Ollama Service
     Loaded: loaded (/etc/systemd/system/ollama.service; enabled; preset: enabled)
    Drop-In: /etc/systemd/system/ollama.service.d
             └─override.conf
     Active: activating (auto-restart) (Result: oom-kill) since Mon 2024-05-13 10:11:12 CEST; 3s ago
    Process: 1234 ExecStart=/usr/local/bin/ollama serve (code=killed, signal=KILL)
   Main PID: 1234 (code=killed, signal=KILL)
"""


def _status_episodes(tmp_path: Path, text: str) -> list[dict]:
    log = tmp_path / "status.txt"
    log.write_text(text)
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout)["episodes"])


def test_a_restarting_units_status_names_its_unit_across_its_drop_ins(tmp_path: Path) -> None:
    (episode,) = _status_episodes(tmp_path, _UNIT_STATUS)
    assert (episode["killer"], episode["unit"]) == ("systemd", "ollama.service")
    assert episode["time"] == "2024-05-13T10:11:12+02:00"  # as printed: CEST is two hours east


@pytest.mark.parametrize(
    ("text", "unit", "time"),
    [
        # Another unit's heading with other text between is not this status's.
        (
            "● other.service - Other\n  some unrelated line\n" + _UNIT_STATUS.split("\n", 1)[1],
            None,
            "2024-05-13T10:11:12+02:00",
        ),
        # A zone oomtrace does not know gives no time: it could be any offset.
        (_UNIT_STATUS.replace("CEST", "XYZT"), "ollama.service", None),
    ],
    ids=["another heading", "unknown zone"],
)
def test_a_status_says_no_unit_or_time_it_cannot_read(
    text: str, unit: str | None, time: str | None, tmp_path: Path
) -> None:
    (episode,) = _status_episodes(tmp_path, text)
    assert (episode["unit"], episode["time"]) == (unit, time)


def test_a_status_of_another_result_or_state_is_no_kill_and_its_since_no_prefix(tmp_path: Path) -> None:
    text = (
        "● db.service - Database\n"
        "     Active: failed (Result: exit-code) since Sat 2025-10-04 21:13:58 UTC; 21s ago\n"
        "● web.service - Web\n"
        "     Active: active (running) since Sat 2025-10-04 21:13:58 UTC; 1 day ago\n"
        "[ 5864.708440] Out of memory: Killed process 4121 (python3) total-vm:8192kB, anon-rss:4096kB, "
        "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:64kB oom_score_adj:0\n"
    )
    log = tmp_path / "status.txt"
    log.write_text(text)
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC")
    document = json.loads(result.stdout)
    assert [e["killer"] for e in document["episodes"]] == ["kernel"]
    # The `since` time was read as the prefix of a kernel line `UTC; 1 day ago` before.
    assert "2025" not in " ".join(run("list", "-k", str(log), "--tz", "UTC").stdout.split())


def test_the_chunk_scan_reads_a_status_heading_as_a_full_read_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oomtrace.sources import bigfile
    from tests.test_fastpath import listing

    monkeypatch.setattr(bigfile, "HEAD_LINES", 2)
    noise = [f"usb 1-1.{n}: new high-speed USB device number {n} using xhci_hcd" for n in range(40)]
    log = tmp_path / "status.txt"
    log.write_text("\n".join([*noise, *_UNIT_STATUS.splitlines(), *noise]) + "\n")
    fast, full = listing(log, True, monkeypatch), listing(log, False, monkeypatch)
    assert fast["episodes"] == full["episodes"]
    (episode,) = full["episodes"]
    assert episode["unit"] == "ollama.service"


_POD_YAML = """\
status:
  containerStatuses:
  - containerID: containerd://5a1b
    image: docker.io/library/python:3.11
    imageID: docker.io/library/python@sha256:0c0e
    lastState:
      terminated:
        containerID: containerd://9f3c
        exitCode: 137
        finishedAt: "2024-03-02T10:11:12Z"
        reason: OOMKilled
        startedAt: "2024-03-02T09:00:01Z"
    name: trainer
    ready: true
    restartCount: 1
    state:
      running:
        startedAt: "2024-03-02T10:11:13Z"
  - containerID: containerd://77aa
    image: docker.io/library/nginx:1.25
    lastState: {}
    name: proxy
    ready: true
    restartCount: 0
    state:
      terminated:
        exitCode: 137
        finishedAt: "2024-03-02T11:00:00Z"
        reason: OOMKilled
        startedAt: "2024-03-02T09:00:02Z"
"""


def test_kubectl_get_pod_yaml_names_each_container_above_or_below_its_reason(tmp_path: Path) -> None:
    # `kubectl get pod -o yaml` sorts keys: a lastState's container name prints below it, a
    # state's above it; the finishedAt is in the reason's own `terminated` mapping.
    log = tmp_path / "pod.yaml"
    log.write_text(_POD_YAML)
    episodes = episodes_of_file(log)
    assert [(e["victim"]["comm"], e["time"], e["killer"]) for e in episodes] == [
        ("trainer", "2024-03-02T10:11:12+00:00", "container-runtime"),
        ("proxy", "2024-03-02T11:00:00+00:00", "container-runtime"),
    ]


@pytest.mark.parametrize(
    ("change", "cut"),
    [
        # The lastState's name elided (`...`): not the next container's `proxy`.
        ("    name: trainer\n", "    ...\n"),
        # A state with no name before it in its item: not the item above's `trainer`.
        ("    lastState: {}\n    name: proxy\n", "    lastState: {}\n"),
    ],
    ids=["below", "above"],
)
def test_a_yaml_status_names_no_other_containers(change: str, cut: str, tmp_path: Path) -> None:
    log = tmp_path / "pod.yaml"
    log.write_text(_POD_YAML.replace(change, cut))
    comms = [(e["victim"] or {}).get("comm") for e in episodes_of_file(log)]
    assert len(comms) == 2 and None in comms
    assert comms.count("trainer") + comms.count("proxy") == 1


def test_a_yaml_status_is_a_kill_where_it_was_refused_as_no_kill() -> None:
    # flyteorg/flyteplugins#48: the pod's YAML says `reason: OOMKilled`, its name elided.
    (episode,) = episodes_of("sysd-k8s-get-pod-status-yaml-state-oomkilled-elided")
    assert (episode["killer"], episode["victim"], episode["time"]) == (
        "container-runtime",
        None,
        "2019-08-29T00:51:41+00:00",
    )


_RECLAIM = """\
12-01 23:54:11.386   467   467 I lmkd    : Reclaim 'com.gota.app' (30364), uid 10274, oom_score_adj 700, state 15
12-01 23:54:11.386   467   467 I lmkd    :    to free 113444kB rss, 138548kB swap; reason: min watermark
12-01 23:54:11.616 27501 27501 I Zygote  : Process 30364 exited due to signal 9 (Killed)
12-01 23:54:11.617 27716 28629 I ActivityManager: Process com.gota.app (pid 30364) has died: prev LAST(10,623)
"""


def test_a_vendor_lmkds_reclaim_with_what_it_frees_is_a_kill(tmp_path: Path) -> None:
    # A Samsung phone's lmkd words its kill `Reclaim`, then AOSP's `to free ...kB rss, ...kB swap;
    # reason:`, and the app exits on signal 9 at once (the shape a public project's QA notes quote;
    # their repository could not be traced, so it is not in the corpus).
    log = tmp_path / "logcat.txt"
    log.write_text(_RECLAIM)
    (episode,) = episodes_of_file(log)
    victim = episode["victim"]
    assert (episode["killer"], victim["comm"], victim["pid"], victim["uid"]) == (
        "lmkd",
        "com.gota.app",
        30364,
        10274,
    )
    assert (victim["oom_score_adj"], victim["rss_kb"]) == (700, 113444)


def test_a_reclaim_that_frees_nothing_said_is_no_kill(tmp_path: Path) -> None:
    # Without what it frees, a vendor's `Reclaim` may be a reclaim of the app's memory (Huawei's
    # framework sends lmkd LMK_PROCRECLAIM for that): no death is said.
    log = tmp_path / "logcat.txt"
    log.write_text(_RECLAIM.splitlines()[0] + "\n")
    assert episodes_of_file(log) == []


def test_a_records_own_words_end_no_sentence_inside_the_story() -> None:
    # `... in this unit.` quoted mid-sentence read `in this unit., says a record ...`.
    case = str(CASES / "user-oomd-unit-records-many-scopes" / "input.txt")
    told = " ".join(run("why", "-k", case, "app-gnome-slack-7078.scope", "--tz", "UTC").stdout.split())
    assert "in this unit, says a record" in told
    assert ".," not in told and ". at " not in told


def test_zygotes_exit_on_sigkill_witnesses_lmkds_kill_and_is_no_kill_of_its_own(tmp_path: Path) -> None:
    log = tmp_path / "logcat.txt"
    log.write_text(_RECLAIM)
    (episode,) = episodes_of_file(log)
    assert [w["who"] for w in episode["witnesses"]] == ["Zygote", "ActivityManager"]
    assert "Zygote saw pid 30364 exit on signal 9 (Killed)" in episode["witnesses"][0]["text"]
    # Alone, or on another signal (a crash), Zygote's line is no kill and witnesses none.
    zygote = _RECLAIM.splitlines()[2]
    log.write_text(
        zygote + "\n" + zygote.replace("30364", "4100").replace("signal 9 (Killed)", "signal 11") + "\n"
    )
    assert episodes_of_file(log) == []
    log.write_text(
        "\n".join([*_RECLAIM.splitlines()[:2], _RECLAIM.splitlines()[2].replace("9 (Killed)", "11")])
    )
    (episode,) = episodes_of_file(log)
    assert episode["witnesses"] == []


def test_systemd_oomds_killed_line_cut_after_its_path_is_a_kill_whose_cgroup_is_not_said() -> None:
    # The excerpt ends inside the cgroup's name (`.../app-org.gnome.Terminal.slice/tmux`).
    (episode,) = episodes_of("user2-oomd-fr-avril-elided-cut-path")
    assert (episode["killer"], episode["unit"], episode["task_memcg"]) == ("systemd-oomd", None, None)
    assert episode["killer_reason"].endswith("(the line is cut there: the cgroup's name may go on)")


def test_a_wrapped_oomd_kill_is_read_whole_and_a_bare_killed_path_from_another_writer_is_none(
    tmp_path: Path,
) -> None:
    head = "Apr 16 21:08:50 host systemd-oomd[93234]: Killed /user.slice/app.slice/vte-spawn-1.scope"
    rest = "due to memory pressure for /user.slice being 61.39% > 50.00% for > 20s with reclaim activity"
    log = tmp_path / "oomd.log"
    log.write_text(f"{head}\n{rest}\n")
    (episode,) = episodes_of_file(log)
    assert (episode["unit"], episode["killer_reason"]) == ("vte-spawn-1.scope", rest.removeprefix("due to "))
    log.write_text(head.replace("systemd-oomd[93234]", "myscript[4000]") + "\n")
    assert episodes_of_file(log) == []


def test_systemds_record_names_the_unit_of_a_cut_oomd_kill_never_a_second_kill(tmp_path: Path) -> None:
    log = tmp_path / "oomd.log"
    kill = "Dec 18 19:34:56 user-desktop systemd-oomd[840]: Killed /user.slice/app.slice/vte-spawn-dbb4a75e-0"
    record = (
        "Dec 18 19:34:56 user-desktop systemd[1837]: vte-spawn-dbb4a75e-031f-480d-924b-5de5af7579d2.scope: "
        "systemd-oomd killed 12 process(es) in this unit."
    )
    log.write_text(f"{kill}\n{record}\n")
    (episode,) = episodes_of_file(log)
    assert episode["unit"] == "vte-spawn-dbb4a75e-031f-480d-924b-5de5af7579d2.scope"
    assert len(episode["unit_records"]) == 1
    # Another unit's record (its name does not go on from the cut) is a kill of its own.
    log.write_text(f"{kill}\n{record.replace('vte-spawn-dbb4a75e', 'app-gnome-slack')}\n")
    assert [e["unit"] for e in episodes_of_file(log)] == [
        None,
        "app-gnome-slack-031f-480d-924b-5de5af7579d2.scope",
    ]
