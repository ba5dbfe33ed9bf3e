"""What pastes do to kernel lines, one kind at a time, with our own examples.

The real-paste corpus (tests/realworld/) is the measure; these are the shapes it could not show
(no public sample was found) or shows once, written out so each stays understood. Every example
is a real kernel or daemon line wrapped in what terminals, pagers, mail clients, consoles and
log shippers put around it.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import ROOT, run
from tests.realworld.score import _actual

KILL = (
    "Out of memory: Killed process 1966928 (llama-server) total-vm:164222812kB, anon-rss:31651260kB, "
    "file-rss:8420kB, shmem-rss:0kB, UID:1000 pgtables:63896kB oom_score_adj:200"
)
HEADER = "dashboard-servi invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0"
VICTIM = {"victim": "llama-server", "pid": 1966928, "anon_rss_kb": 31651260, "oom_score_adj": 200}


def facts(tmp_path: Path, text: str, *extra: str) -> tuple[list[dict], dict]:
    log = tmp_path / "paste.txt"
    log.write_text(text)
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC", "--year", "2026", *extra)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    return document["episodes"], document


def assert_facts(episode: dict, expected: dict) -> None:
    got = {name: _actual(episode, name) for name in expected}
    assert got == expected


PREFIXED = {
    "kubectl logs --prefix": f"[pod/llama-0/server] [ 5864.708440] {KILL}\n",
    "docker compose column": f"llama_1  | [ 5864.708440] {KILL}\n",
    "shell prompt glued": f"root@gpu-3:~# dmesg | tail -1[ 5864.708440] {KILL}\n",
    "login prompt glued": f"gpu-3 login: [ 5864.708440] {KILL}\n",
    "e-mail quoting": f"> > [ 5864.708440] {KILL}\n",
    "Markdown bold": f"**[ 5864.708440] {KILL}**\n",
    "Markdown code span": f"`[ 5864.708440] {KILL}`\n",
    "Markdown escapes": f"\\[ 5864.708440\\] {KILL}\n",
    "first line lost its [": f" 5864.708440] {KILL}\n",
    "/proc/kmsg priority": f"<3>[ 5864.708440] {KILL}\n",
    "VM console name": f"vm-7 console | [ 5864.708440] {KILL}\n",
    "dmesg -x": f"kern  :err   : [ 5864.708440] {KILL}\n",
    "VMware vmware.log guest line": f"2026-11-14T13:12:12.127Z In(05) vcpu-5 - Guest: <3>[ 5864.708440] {KILL}\n",
}


@pytest.mark.parametrize("text", PREFIXED.values(), ids=PREFIXED.keys())
def test_a_kill_line_behind_any_prefix(text: str, tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {**VICTIM, "uptime_s": 5864.70844, "constraint": "global"})


STAMPED = {
    "OpenWrt logread": (f"Sat Nov 14 13:12:12 2026 kern.err kernel: [ 5864.708440] {KILL}\n", "13:12:12"),
    "syslog severity word": (f"Nov 14 13:12:12 gpu-3 INFO kernel: {KILL}\n", "13:12:12"),
    "syslog facility.level": (f"Nov 14 13:12:12 gpu-3 kern.warning kernel: {KILL}\n", "13:12:12"),
    "bracketed local time with zone": (f"[2026-11-14 14:12:12 CET] {KILL}\n", "14:12:12"),
    "dmesg -T, German": (f"[Sa Nov 14 13:12:12 2026] {KILL}\n", "13:12:12"),
    "dmesg -T, Russian": (f"[Сб ноя 14 13:12:12 2026] {KILL}\n", "13:12:12"),
    "journalctl short, Spanish": (f"nov 14 13:12:12 gpu-3 kernel: {KILL}\n", "13:12:12"),
    "a date: prefix before syslog": (
        f"2026-11-14 13:12:12 | Nov 14 13:12:12 gpu-3 kernel: {KILL}\n",
        "13:12:12",
    ),
}


@pytest.mark.parametrize(("text", "clock"), STAMPED.values(), ids=STAMPED.keys())
def test_a_stamp_read_from_any_prefix(text: str, clock: str, tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {**VICTIM, "clock": clock, "date": "2026-11-14"})


def test_dmesg_human_minutes_and_deltas(tmp_path: Path) -> None:
    text = f"[Nov14 13:12] {HEADER}\n[  +2.500000] {KILL}\n"
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {**VICTIM, "trigger": "dashboard-servi", "clock": "13:12:02"})


def test_journalctl_verbose(tmp_path: Path) -> None:
    text = (
        "Sat 2026-11-14 13:12:12.345678 UTC [s=4f2a;i=1c3;b=9e1d;m=15d8b1a3c;t=5f0e;x=7a1b]\n"
        "    _TRANSPORT=kernel\n"
        "    PRIORITY=3\n"
        "    SYSLOG_IDENTIFIER=kernel\n"
        f"    MESSAGE={KILL}\n"
        "    _HOSTNAME=gpu-3\n"
    )
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {**VICTIM, "clock": "13:12:12"})


def test_short_monotonic_of_a_daemon_is_not_the_kernel(tmp_path: Path) -> None:
    text = (
        '[ 5864.708440] gpu-3 earlyoom[812]: sending SIGTERM to process 4121 uid 1000 "python3": '
        "badness 900, VmRSS 3012 MiB\n"
    )
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {"killer": "earlyoom", "victim": "python3", "pid": 4121, "trigger_pid": 812})


def test_android_logcat_lmkd(tmp_path: Path) -> None:
    text = (
        "11-14 13:12:12.345   693   693 I lowmemorykiller: Kill 'com.android.chrome' (12345), uid 10123, "
        "oom_score_adj 900 to free 123456kB rss, 7890kB swap; reason: low watermark is breached\n"
    )
    (episode,), _ = facts(tmp_path, text)
    assert_facts(
        episode,
        {
            "killer": "lmkd",
            "victim": "com.android.chrome",
            "pid": 12345,
            "trigger": "lmkd",
            "trigger_pid": 693,
        },
    )
    assert episode["victim"]["oom_score_adj"] == 900


def test_android_lowmemorykiller_wrapped_over_lines(tmp_path: Path) -> None:
    text = (
        "[  812.113411] lowmemorykiller: Killing 'd.play.games.ui' (2613), adj 1000,\n"
        "   to free 20784kB on behalf of 'kswapd0' (442) because\n"
        "   cache 32112kB is below limit 32384kB for oom_score_adj 1000\n"
    )
    (episode,), _ = facts(tmp_path, text)
    assert_facts(
        episode,
        {
            "killer": "lowmemorykiller",
            "victim": "d.play.games.ui",
            "pid": 2613,
            "trigger": "kswapd0",
            "trigger_pid": 442,
        },
    )


VENDOR = {
    "RHEL 7": (
        "[4025.611413] CPU: 1 PID: 29481 Comm: sed Kdump: loaded Tainted: G           OE  ------------ T "
        "3.10.0-1160.el7.x86_64 #1\n"
        "[4025.611500] Killed process 6576 (mysqld), UID 27, total-vm:33914892kB, anon-rss:20629004kB, "
        "file-rss:0kB, shmem-rss:0kB\n",
        {"victim": "mysqld", "pid": 6576, "anon_rss_kb": 20629004, "total_vm_kb": 33914892},
        "3.10.0-1160.el7.x86_64",
    ),
    "6.x CPU line with UID": (
        "[ 53.45] CPU: 3 UID: 1000 PID: 4121 Comm: python3 Not tainted 6.12.0-1-amd64 #1 Debian 6.12.3-1\n"
        "[ 53.46] Out of memory: Killed process 4121 (python3) total-vm:100kB, anon-rss:50kB, file-rss:0kB, "
        "shmem-rss:0kB, UID:1000 pgtables:8kB oom_score_adj:0\n",
        {"victim": "python3", "pid": 4121, "oom_score_adj": 0},
        "6.12.0-1-amd64",
    ),
    "2.4": (
        "Out of Memory: Killed process 812 (httpd).\nVM: killing process mysqld\n",
        {"victim": "httpd", "pid": 812, "constraint": "global"},
        None,
    ),
}


@pytest.mark.parametrize(("text", "expected", "kernel"), VENDOR.values(), ids=VENDOR.keys())
def test_vendor_and_old_kernels(text: str, expected: dict, kernel: str | None, tmp_path: Path) -> None:
    episodes, _ = facts(tmp_path, text)
    assert_facts(episodes[0], expected)
    if kernel:
        assert episodes[0]["kernel"] == kernel


def test_2_4_vm_killing_has_no_pid(tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, "VM: killing process mysqld\n")
    assert_facts(episode, {"victim": "mysqld", "pid": None, "killer": "kernel"})


SUMMARY = (
    "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
    "task_memcg=/user.slice/user-1000.slice,task=llama-server,pid=1966928,uid=1000"
)


def test_a_kill_line_cut_inside_the_name_takes_it_from_the_summary(tmp_path: Path) -> None:
    text = f"[ 1.0] {HEADER}\n[ 1.1] {SUMMARY}\n[ 1.2] Out of memory: Killed process 1966928 (llama-se\n"
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {"victim": "llama-server", "pid": 1966928, "trigger": "dashboard-servi"})
    assert episode["victim"]["comm_from"] == "oom-kill summary"


def test_the_summary_is_the_victim_when_no_kill_line_follows(tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, f"[ 1.0] {HEADER}\n[ 1.1] {SUMMARY}\n")
    assert_facts(episode, {"victim": "llama-server", "pid": 1966928, "constraint": "global"})
    assert episode["victim"]["pid_from"].startswith("oom-kill summary")
    assert "kill" in episode["missing"]


def test_a_deleted_pid_is_found_in_the_summary(tmp_path: Path) -> None:
    text = f"[ 1.1] {SUMMARY}\n[ 1.2] {KILL.replace('1966928', 'XXXX')}\n"
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {"victim": "llama-server", "pid": 1966928})
    assert episode["victim"]["pid_from"] == "oom-kill summary"


@pytest.mark.parametrize(
    "header",
    ["python3 invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GF", "python3 invoked oom-killer"],
    ids=["cut before order", "nothing after the name"],
)
def test_a_cut_header_still_names_the_trigger(header: str, tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, f"[ 1.0] {header}\n[ 1.2] {KILL}\n")
    assert_facts(episode, {"trigger": "python3", "victim": "llama-server", "order": None})


def test_retyped_sizes_and_constraint(tmp_path: Path) -> None:
    text = (
        "oom-kill:constraint=CONSTRAINT_MEMCGG,oom_memcg=/docker/3f2a,task_memcg=/docker/3f2a,task=java,pid=77,uid=0\n"
        "Memory cgroup out of memory: Killed process 77 (java) total-vm:1,234,567kB, anon-rss:654,321 kb, "
        "file-rss:0kB, shmem-rss:0kB\n"
    )
    (episode,), _ = facts(tmp_path, text)
    assert_facts(
        episode,
        {"total_vm_kb": 1234567, "anon_rss_kb": 654321, "constraint": "memcg", "memcg": "/docker/3f2a"},
    )
    assert "CONSTRAINT_MEMCGG" in episode["constraint_from"]


def test_a_terminal_wrap_is_joined_back(tmp_path: Path) -> None:
    text = (
        "[ 5864.708440] Out of memory: Killed process 1966928 (llama-server) total-vm:164222812kB, anon-rss:3165\n"
        "1260kB, file-rss:8420kB, shmem-rss:0kB, UID:1000 pgtables:63896kB oom_score_adj:200\n"
    )
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, VICTIM)


def test_elisions_and_doubled_blank_lines_change_nothing(tmp_path: Path) -> None:
    text = f"[ 1.0] {HEADER}\n\n...\n\n[ 1.1] {SUMMARY}\n\n…\n\n[ 1.2] {KILL}\n\n"
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {**VICTIM, "trigger": "dashboard-servi", "constraint": "global"})


def test_a_tasks_table_alone_is_an_episode_that_says_what_it_lacks(tmp_path: Path) -> None:
    text = (
        "[ 1.0] [  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name\n"
        "[ 1.0] [   4121]  1000  4121   105467    10541   368640        0             0 python3\n"
    )
    (episode,), _ = facts(tmp_path, text)
    assert episode["victim"] is None and {"header", "kill"} <= set(episode["missing"])


TRACE_MEMCG = [
    " out_of_memory+0x11e/0x5a0",
    " mem_cgroup_out_of_memory+0x134/0x150",
    " try_charge_memcg+0x6b6/0x7d0",
]
TRACE_GLOBAL = [" out_of_memory+0x11e/0x5a0", " __alloc_pages_slowpath.constprop.0+0xbd4/0xdc0"]
TRACE_STALE = [
    " out_of_memory+0x11e/0x5a0",
    " ? mem_cgroup_out_of_memory+0x134/0x150",
    " __alloc_pages_slowpath+0xbd4/0xdc0",
]


@pytest.mark.parametrize(
    ("frames", "constraint"),
    [(TRACE_MEMCG, "memcg"), (TRACE_GLOBAL, "global"), (TRACE_STALE, "global")],
    ids=["memcg frames", "allocator frames", "a ? frame never counts"],
)
def test_the_constraint_inferred_from_the_call_trace(
    frames: list[str], constraint: str, tmp_path: Path
) -> None:
    lines = [f"[ 1.0] {HEADER}", "[ 1.0] Call Trace:", *(f"[ 1.0] {f}" for f in frames)]
    lines.append("[ 1.2] Killed process 1966928 (llama-server) total-vm:100kB, anon-rss:50kB, file-rss:0kB")
    (episode,), _ = facts(tmp_path, "\n".join(lines) + "\n")
    assert episode["constraint"] == constraint
    assert episode["constraint_from"] == "inferred from the call trace"


def test_the_memcg_inferred_from_its_stats_when_the_header_is_gone(tmp_path: Path) -> None:
    text = (
        "[ 1.0] Memory cgroup stats for /kubepods/burstable/pod3f2a:\n"
        "[ 1.0] anon 67108864\n"
        "[ 1.2] Killed process 4121 (python3) total-vm:100kB, anon-rss:50kB, file-rss:0kB, shmem-rss:0kB\n"
    )
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {"memcg": "/kubepods/burstable/pod3f2a", "constraint": "memcg"})
    assert episode["memcg_from"] == "memory cgroup stats (inferred)"


USERSPACE = {
    "systemd-oomd Killed": (
        "Nov 14 13:12:12 gpu-3 systemd-oomd[611]: Killed /user.slice/user-1000.slice/user@1000.service/app.slice/"
        "app-llama-4321.scope due to memory pressure for /user.slice/user-1000.slice/user@1000.service being "
        "61.39% > 50.00% for > 20s with reclaim activity\n",
        {
            "killer": "systemd-oomd",
            "victim": "app-llama-4321.scope",
            "trigger": "systemd-oomd",
            "trigger_pid": 611,
        },
    ),
    "systemd-oomd Marked": (
        "Nov 14 13:12:12 gpu-3 systemd-oomd[611]: Marked /system.slice/llama.service for killing due to memory "
        "used (16309088256) / total (16542982144) and swap used (7743770624) / total (8589930496) being more "
        "than 90.00%\n",
        {"killer": "systemd-oomd", "victim": "llama.service", "trigger_pid": 611},
    ),
    "oomd attempting": (
        "Nov 14 13:12:12 gpu-3 oomd[77]: oomd attempting to kill 4121\n",
        {"killer": "systemd-oomd", "pid": 4121, "trigger": "oomd", "trigger_pid": 77},
    ),
    "earlyoom on stdout": (
        'sending SIGTERM to process 4121 uid 1000 "python3": badness 900, VmRSS 3012 MiB\n',
        {"killer": "earlyoom", "victim": "python3", "pid": 4121},
    ),
    "earlyoom behind a date: prefix": (
        '2026-11-14 13:12:12: sending SIGKILL to process 4121 uid 1000 "python3": badness 900, VmRSS 3012 MiB\n',
        {"killer": "earlyoom", "victim": "python3", "pid": 4121, "clock": "13:12:12"},
    ),
    "earlyoom in a French journal": (
        'nov. 14 13:12:12 gpu-3 earlyoom[812]: sending SIGTERM to process 4121 uid 1000 "python3": badness 900, '
        "VmRSS 3012 MiB\n",
        {"killer": "earlyoom", "trigger": "earlyoom", "trigger_pid": 812, "clock": "13:12:12"},
    ),
}


@pytest.mark.parametrize(("text", "expected"), USERSPACE.values(), ids=USERSPACE.keys())
def test_userspace_killers_in_any_prefix(text: str, expected: dict, tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, expected)


def test_unit_records_with_no_prefix_at_all(tmp_path: Path) -> None:
    text = (
        "llama.service: A process of this unit has been killed by the OOM killer.\n"
        "llama.service: Main process exited, code=killed, status=9/KILL\n"
        "llama.service: Failed with result 'oom-kill'.\n"
        "llama.service: Consumed 2min 45.760s CPU time, 11.4G memory peak.\n"
    )
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {"killer": "systemd", "victim": "llama.service"})


def test_systemd_oomd_killed_some_processes_is_a_kill_with_no_count(tmp_path: Path) -> None:
    # systemd says "some" when it cannot read the count off the cgroup (systemd#35270's desktop).
    text = (
        "Nov 20 21:16:28 erebus systemd[2917]: app-gnome-slack-7078.scope: systemd-oomd killed some process(es) "
        "in this unit.\n"
        "Nov 20 21:16:28 erebus systemd[2917]: org.gnome.Shell@x11.service: systemd-oomd killed 2 process(es) in "
        "this unit.\n"
    )
    episodes, _ = facts(tmp_path, text)
    assert [(e["killer"], e["unit"]) for e in episodes] == [
        ("systemd-oomd", "app-gnome-slack-7078.scope"),
        ("systemd-oomd", "org.gnome.Shell@x11.service"),
    ]
    counts = [[n["count"] for n in e["unit_records"]] for e in episodes]
    assert counts == [[None], [2]]


def test_unit_records_that_lost_the_unit_name(tmp_path: Path) -> None:
    text = "A process of this unit has been killed by the OOM killer.\nFailed with result 'oom-kill'.\n"
    (episode,), _ = facts(tmp_path, text)
    assert episode["killer"] == "systemd"


@pytest.mark.parametrize(
    "line",
    [
        "Nov 14 13:12:10 gpu-3 systemd-journald[402]: Missed 1204 kernel messages",
        "[ 5864.1] ** 12 printk messages dropped **",
        "[ 5864.1] oom_kill_process: 7 callbacks suppressed",
    ],
    ids=["journald missed", "printk dropped", "rate limited"],
)
def test_lost_messages_are_said_in_list_and_why(line: str, tmp_path: Path) -> None:
    log = tmp_path / "k.log"
    log.write_text(f"{line}\n[ 5864.708440] {KILL}\n")
    _, document = facts(tmp_path, log.read_text())
    assert "lost-messages" in {w["kind"] for w in document["warnings"]}
    for command in (["list"], ["why", "llama-server"]):
        result = run(*command, "-k", str(log), "--tz", "UTC", "--year", "2026")
        assert "Incomplete: the log says it lost records" in " ".join(result.stdout.split())


@pytest.mark.parametrize("name", ["kworker/u8:2", "CPU 0/KVM", "IPDL Background", "runc:[2:INIT]", "a`b"])
def test_why_finds_names_with_slashes_spaces_and_brackets(name: str, tmp_path: Path) -> None:
    log = tmp_path / "k.log"
    log.write_text(
        f"[ 1.2] Out of memory: Killed process 4121 ({name}) total-vm:100kB, anon-rss:50kB, file-rss:0kB\n"
    )
    result = run("why", name, "-k", str(log), "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["episode"]["victim"]["comm"] == name


def test_a_file_with_an_oom_message_in_no_known_format_is_read(tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, f"some tool | node-17 | {KILL}\n")
    assert_facts(episode, VICTIM)


def test_text_with_no_stamp_and_no_kernel_message_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "notes.txt"
    log.write_text("hello\nthis is a shopping list\n")
    result = run("list", "-k", str(log))
    assert result.exit_code == 2
    assert "does not look like a kernel log" in result.stderr


# ---- write-ups: log lines quoted in prose (tests/seeds) ----------------------------------------
# The seeds are three samples of a class: lines quoted with a bare time of day (no date, no zone),
# a kill line and its summary on neighbouring lines, `...` cuts, prose all around. What each
# file's own lines state must come out; what only its prose states (other processes "taken
# down", an adj the writer names) must not.

SEEDS = ROOT / "tests" / "seeds"


def seed(name: str) -> Path:
    if not SEEDS.is_dir():
        pytest.skip(f"the seed write-ups are not at {SEEDS}")
    (path,) = SEEDS.glob(f"{name}_*.txt")
    return path


def listed(log: Path) -> dict:
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC", "--year", "2026")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_seed_000_one_kill_with_its_trigger_its_warning_and_no_invented_date() -> None:
    log = seed("000")
    document = listed(log)
    (episode,) = document["episodes"]
    assert_facts(
        episode,
        {**VICTIM, "trigger": "dashboard-servi", "constraint": "global", "total_vm_kb": 164222812},
    )
    # The write-up quotes no cgroup: where the 200 came from is not in it.
    assert episode["victim"]["oom_score_adj_origin"].startswith(
        "200 was set for it, and the log does not say"
    )
    # A time of day and no date: JSON gives no time, only the stamp as printed.
    assert (episode["time"], episode["raw_time"]) == (None, "13:12:12")
    (incident,) = document["incidents"]
    assert incident["earliest_warning"]["kind"] == "nvrm-no-memory"
    assert incident["earliest_warning"]["raw_time"] == "13:08:59"
    assert incident["lead_time_s"] == 193.0

    table = run("list", "-k", str(log)).stdout
    assert "13:12:12  llama-server" in table and "dashboard-servi" in table
    # No date is invented: not today's (what dateutil fills in), not --year's.
    today = datetime.now()
    assert today.strftime("%m-%d") not in table and str(today.year) not in table and "2026" not in table
    assert "13:12:12  dashboard" not in table

    why = run("why", "llama-server", "-k", str(log))
    assert why.exit_code == 0, why.output
    assert "Invoked by     dashboard-servi\n" in why.stdout
    assert "First warning  NVIDIA driver out of memory (NV_ERR_NO_MEMORY) (3m13s before the" in why.stdout
    assert "When           13:12:12 (date unknown)" in why.stdout
    # The write-up's point (issue 39): RSS is the wrong instrument. Its kill line has no
    # file-rss, so the gap is said against anon-rss, and what the missing field leaves open.
    said = " ".join(why.stdout.split())
    assert (
        "Outside RSS total-vm 156.6 GiB against anon-rss 30.2 GiB: 126.4 GiB mapped but not anonymous" in said
    )
    assert "gives no file-rss or shmem-rss, so the log does not say how much of it was page cache" in said
    for false in ("not in the log", "First warning  none", "asking for None", "2026", "Also killed    llama"):
        assert false not in why.stdout
    # A quote is not the whole log: what it holds is said, nothing beyond it.
    assert "Also killed    no other kill in the input" in why.stdout

    trigger = run("why", "dashboard-servi", "-k", str(log), "--format", "markdown")
    assert trigger.exit_code == 0, trigger.output
    assert "dashboard-servi invoked the OOM killer at 13:12:12" in trigger.stdout
    assert "the kernel killed llama-server (pid 1966928" in trigger.stdout


def test_seed_002_one_kill_its_summary_after_it_and_a_cut_summary_read_as_printed() -> None:
    log = seed("002")
    document = listed(log)
    (episode,) = document["episodes"]
    assert_facts(
        episode,
        {
            "victim": "ds4-server",
            "pid": 124531,
            "anon_rss_kb": 968,
            "total_vm_kb": 279950520,
            "constraint": "global",
        },
    )
    assert len(document["incidents"]) == 1
    # The writer's adj (oom_score_adj=1000) and the desktop processes the prose says were taken
    # down are in no log line: no adj, no other kill.
    assert episode["victim"]["oom_score_adj"] is None
    why = run("why", "ds4-server", "-k", str(log), "--format", "markdown").stdout
    assert "does not say which limit" not in why
    assert "global OOM: the whole machine ran out of memory" in why
    assert "no other kill in the input" in why and "no other process in this incident" not in why
    assert "none in the input (the kill has no time" in why
    for prose_only in ("pipewire", "dbus-daemon", "kactivitymanage", "1000"):
        assert prose_only not in why
    assert run("why", "pipewire", "-k", str(log)).exit_code != 0
    # Issue 39: 968 KiB resident against 267 GiB mapped, said with the fields the line has.
    said = " ".join(why.split())
    assert (
        "total-vm 267.0 GiB against anon-rss 968 KiB: 267.0 GiB mapped but not anonymous and resident" in said
    )


def test_seed_004_a_write_up_with_no_kill_says_so_and_nothing_else() -> None:
    result = run("list", "-k", str(seed("004")))
    assert result.exit_code == 2
    assert "holds no OOM kill" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("name", ["000", "002"])
def test_seeds_read_the_same_by_the_chunk_scan(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("hyperscan", reason="the chunk scan needs hyperscan")
    from oomtrace.sources import bigfile

    log = seed(name)
    monkeypatch.setattr(bigfile, "HEAD_LINES", 2)
    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "0")
    fast = listed(log)
    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", str(1 << 60))
    full = listed(log)
    assert (fast["episodes"], fast["incidents"]) == (full["episodes"], full["incidents"])


# The class the seeds sample, in shapes they do not show.
TIME_OF_DAY = {
    "milliseconds, one space": (
        f"13:08:59.120 NVRM: Check failed: Out of memory [NV_ERR_NO_MEMORY]\n13:12:12.500 {HEADER}\n"
        f"13:12:12.501 {KILL}\n",
        193.38,
    ),
    "past midnight": (
        f"23:59:58  NVRM: Check failed: Out of memory [NV_ERR_NO_MEMORY]\n00:00:05  {HEADER}\n00:00:05  {KILL}\n",
        7.0,
    ),
    "a stamp and its message split": (
        f"13:08:59  NVRM: Check failed: Out of memory [NV_ERR_NO_MEMORY]\n13:12:12\n{KILL}\n",
        193.0,
    ),
    "bracketed": (
        f"[13:08:59] NVRM: Check failed: Out of memory [NV_ERR_NO_MEMORY]\n[13:12:12] {KILL}\n",
        193.0,
    ),
    "behind a column": (
        f"node-1 | 13:08:59 | NVRM: Check failed: Out of memory [NV_ERR_NO_MEMORY]\nnode-1 | 13:12:12 | {KILL}\n",
        193.0,
    ),
    "quoted in prose, kill then its summary": (
        "We saw this in the kernel log:\n\n"
        f"> 13:08:59  NVRM: Check failed: Out of memory [NV_ERR_NO_MEMORY]\n> 13:12:12  {KILL}\n"
        "> 13:12:12  oom-kill:constraint=CONSTRAINT_NONE,...,global_oom,task=llama-server,pid=1966928\n\n"
        "and then the server was gone.\n",
        193.0,
    ),
}


@pytest.mark.parametrize(("text", "lead"), TIME_OF_DAY.values(), ids=TIME_OF_DAY.keys())
def test_a_time_of_day_alone_is_a_stamp_with_no_date(text: str, lead: float, tmp_path: Path) -> None:
    (episode,), document = facts(tmp_path, text)
    assert_facts(episode, {**VICTIM, "constraint": "global"})
    assert episode["time"] is None
    (incident,) = document["incidents"]
    assert incident["earliest_warning"]["kind"] == "nvrm-no-memory"
    assert incident["lead_time_s"] == pytest.approx(lead, abs=0.01)


def test_a_summary_that_names_another_task_is_not_the_kill_before_it(tmp_path: Path) -> None:
    text = (
        f"13:12:12  {KILL}\n13:12:13  oom-kill:constraint=CONSTRAINT_NONE,global_oom,task=python3,pid=4121\n"
    )
    episodes, _ = facts(tmp_path, text)
    assert len(episodes) == 2


# ---- what a copy adds before each line (issue 26) ---------------------------------------------
# Invisible characters, a terminal's colours, a list bullet: cut before the stamp grammar, and the
# date parser never reads past the stamp (a host `gpu07` is not the year 2007, `gpu-07` no zone).
INVISIBLE = {
    "zero-width space": "\u200b",
    "byte-order mark": "\ufeff",
    "word joiner and a no-break space": "\u2060\u00a0",
    "ANSI reset": "\x1b[0m",
    "ANSI colour, bold": "\x1b[1;32m",
    "bullet, no space": "*",
    "bullet and a space": "* ",
    "round bullet": "\u2022 ",
}


@pytest.mark.parametrize("host", ["gpu07", "gpu-07"])
@pytest.mark.parametrize("prefix", INVISIBLE.values(), ids=INVISIBLE.keys())
def test_a_prefix_nobody_sees_moves_no_stamp(prefix: str, host: str, tmp_path: Path) -> None:
    text = f"{prefix}Nov 14 13:12:12 {host} kernel: {HEADER}\n{prefix}Nov 14 13:12:12 {host} kernel: {KILL}\n"
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {**VICTIM, "trigger": "dashboard-servi", "date": "2026-11-14", "clock": "13:12:12"})
    assert episode["host"] == host


@pytest.mark.parametrize(
    "head",
    ["gpu07 2026-11-14 13:12:12 | ", "gpu-07 Sat Nov 14 13:12:12 2026 | ", "[gpu-07] 14.11.2026 13:12:12 > "],
)
def test_a_date_in_an_unknown_prefix_is_read_without_the_words_around_it(head: str, tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, f"{head}{KILL}\n")
    assert_facts(episode, {**VICTIM, "date": "2026-11-14", "clock": "13:12:12"})
    assert episode["time"].endswith("+00:00")


# ---- old and odd kernels (issue 22, point 7) --------------------------------------------------
# Real pastes of each class are in tests/realworld/cases where one was found (OpenVZ:
# old-plesk-virtuozzo-ub-wrapped; a nohang victim named before its act:
# user-nohang-stdout-kill-command); the rest are built here from real lines.
OLD_REPORT = """\
Jun  3 10:00:01 db1 kernel: mysqld invoked oom-killer: gfp_mask=0x201da, order=0, oom_adj=0, oom_score_adj=0
Jun  3 10:00:01 db1 kernel: mysqld cpuset=/ mems_allowed=0
Jun  3 10:00:01 db1 kernel: Pid: 6576, comm: mysqld Not tainted 2.6.32-431.el6.x86_64 #1
Jun  3 10:00:01 db1 kernel: Mem-Info:
Jun  3 10:00:01 db1 kernel: Node 0 Normal free:44256kB min:44304kB low:55380kB high:66456kB active_anon:14612904kB
Jun  3 10:00:01 db1 kernel: Free swap  = 0kB
Jun  3 10:00:01 db1 kernel: 4194303 pages RAM
Jun  3 10:00:01 db1 kernel: [ pid ]   uid  tgid total_vm      rss cpu oom_adj oom_score_adj name
Jun  3 10:00:01 db1 kernel: [ 6576]    27  6576  8478723  5157251   3       0             0 mysqld
Jun  3 10:00:01 db1 kernel: Killed process 6576, UID 27, (mysqld) total-vm:33914892kB, anon-rss:20629004kB, file-rss:0kB
"""


def test_an_old_complete_report_with_no_memcg_lines_is_a_global_oom_inferred(tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, OLD_REPORT)
    assert_facts(episode, {"victim": "mysqld", "pid": 6576, "trigger": "mysqld", "constraint": "global"})
    assert episode["constraint_from"].startswith("inferred")
    why = run("why", "mysqld", "-k", str(tmp_path / "paste.txt"), "--format", "markdown").stdout
    assert "global OOM: the whole machine ran out of memory (inferred: no memory cgroup lines" in why
    # The same report with a memcg line is no global OOM, and one cut before its Mem-Info and
    # tasks table (not complete) says nothing of its limit.
    memcg = OLD_REPORT.replace("Mem-Info:", "memory: usage 65536kB, limit 65536kB, failcnt 120")
    (episode,), _ = facts(tmp_path, memcg)
    assert episode["constraint"] == "memcg"
    cut = "".join(
        line + "\n" for line in OLD_REPORT.splitlines() if "Mem-Info" not in line and "pid" not in line
    )
    (episode,), _ = facts(tmp_path, cut.replace("Node 0", "Zone 0"))
    assert episode["constraint"] is None


GLUED = {
    "syslog lost a newline": (
        f"Nov 14 13:12:12 gpu-3 kernel: [ 5864.700000] {HEADER}\n"
        f"Nov 14 13:12:12 gpu-3 kernel: [ 5864.708430] Mem-Info:Nov 14 13:12:12 gpu-3 kernel: [ 5864.708440] {KILL}\n"
    ),
    "dmesg lines glued": f"[ 5864.700000] {HEADER}[ 5864.708440] {KILL}\n",
    "ISO stamps glued": (
        f"2026-11-14T13:12:12.000000+00:00 gpu-3 kernel: {HEADER}2026-11-14T13:12:12.100000+00:00 gpu-3 kernel: {KILL}\n"
    ),
}


@pytest.mark.parametrize("text", GLUED.values(), ids=GLUED.keys())
def test_two_messages_glued_onto_one_line_are_two_messages(text: str, tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {**VICTIM, "trigger": "dashboard-servi", "gfp_mask": "0x140dca"})
    assert "header" not in episode["missing"] and "kill" not in episode["missing"]


OPENVZ = {
    "RHEL 6 based, container redacted": (
        "[4038014.625029] Out of memory in UB XXXX: OOM killed process 601 (mysqld) score 0 vm:1212112kB, "
        "rss:84964kB, swap:748kB\n",
        {"victim": "mysqld", "pid": 601, "total_vm_kb": 1212112, "memcg": "UB XXXX"},
    ),
    "dmesg behind a prompt": (
        "[root@localhost sales]# dmesg\n[1982048.529636] Out of memory in UB 317592: OOM killed process 2946 (npm) "
        "score 0 vm:1506164kB, rss:237752kB, swap:120052kB\n",
        {"victim": "npm", "pid": 2946, "total_vm_kb": 1506164, "memcg": "UB 317592"},
    ),
    "2.6.18 container exit": (
        "Mar  2 17:35:10 vz1 kernel: OOM killed process httpd (pid=2201, ve=101) exited, free=1432 gen=12.\n",
        {"victim": "httpd", "pid": 2201, "memcg": "VE 101"},
    ),
    "beancounter named after the sizes": (
        "[ 123.456789] OOM killed process 2946 (npm) vm:1506164kB, rss:237752kB, swap:120052kB (ub 317592)\n",
        {"victim": "npm", "pid": 2946, "memcg": "UB 317592"},
    ),
}


@pytest.mark.parametrize(("text", "expected"), OPENVZ.values(), ids=OPENVZ.keys())
def test_an_openvz_container_kill_is_a_memcg_like_kill_of_that_container(
    text: str, expected: dict, tmp_path: Path
) -> None:
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {**expected, "killer": "kernel", "constraint": "memcg"})
    # `rss:` counts file pages too: it is never reported as anon-rss.
    assert episode["victim"]["anon_rss_kb"] is None


def test_grep_over_rotated_files_keeps_the_stamp_after_the_file_name(tmp_path: Path) -> None:
    text = (
        "/var/log/messages-20150510:May  9 23:40:38 web1 kernel: Out of memory: Kill process 2125 (java) score 303 "
        "or sacrifice child\n"
        "/var/log/messages-20150510:May  9 23:40:38 web1 kernel: Killed process 2125, UID 500, (java) "
        "total-vm:4012340kB, anon-rss:1212340kB, file-rss:120kB\n"
        "messages:May 10 03:12:01 web1 kernel: Killed process 2200 (httpd) total-vm:401234kB, anon-rss:121234kB\n"
    )
    episodes, _ = facts(tmp_path, text, "--year", "2015")
    assert [(e["victim"]["comm"], e["time"], e["host"]) for e in episodes] == [
        ("java", "2015-05-09T23:40:38+00:00", "web1"),
        ("httpd", "2015-05-10T03:12:01+00:00", "web1"),
    ]


NOHANG = (
    "Sep 22 10:00:01 pc nohang[530]: Process with highest badness (found in 6 ms):\n"
    "Sep 22 10:00:01 pc nohang[530]:   PID: 12297, Name: tail, badness: 727\n"
    "Sep 22 10:00:01 pc nohang[530]: Implement a corrective action:\n"
    "Sep 22 10:00:01 pc nohang[530]:   Run the command: kill -TERM {pid}\n"
)


def test_a_userspace_killers_victim_named_only_in_an_earlier_line(tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, NOHANG.format(pid=12297))
    assert_facts(episode, {"killer": "nohang", "victim": "tail", "pid": 12297})
    # A kill of another pid is not the named one's.
    (episode,), _ = facts(tmp_path, NOHANG.format(pid=4444))
    assert (episode["victim"]["comm"], episode["victim"]["pid"]) == ("?", 4444)


TRACE = """\
[ 5864.700001] CPU: 5 PID: 4121 Comm: dashboard-servi Tainted: G           OE      6.14.0-1015-nvidia #15-Ubuntu
[ 5864.700002] Hardware name: NVIDIA NVIDIA DGX Spark/P4242, BIOS 5.36_0ACUM018 06/19/2025
[ 5864.700003] Call trace:
[ 5864.700005]  {frame}+0x50/0x280
[ 5864.700006]  __alloc_pages_slowpath.constprop.0+0x8a4/0xd88
[ 5864.708430] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice,task=llama-server,pid=1966928,uid=1000
[ 5864.708440] {kill}
"""


def test_a_report_cut_before_its_header_takes_the_trigger_from_its_cpu_line(tmp_path: Path) -> None:
    (episode,), _ = facts(tmp_path, TRACE.format(frame="dump_header", kill=KILL))
    assert_facts(episode, {**VICTIM, "trigger": "dashboard-servi", "trigger_pid": 4121})
    assert "header" in episode["missing"]
    why = run("why", "llama-server", "-k", str(tmp_path / "paste.txt"), "--format", "markdown").stdout
    assert "| Invoked by | dashboard-servi (pid 4121) |" in why
    # A stack that is not the OOM killer's names no trigger.
    (episode,), _ = facts(tmp_path, TRACE.format(frame="__warn_printk", kill=KILL))
    assert episode["trigger"] is None


def test_dmesg_colours_are_taken_off_and_an_escape_in_a_name_is_kept(tmp_path: Path) -> None:
    coloured = f"\x1b[32m[ 5864.708440]\x1b[0m \x1b[33m{KILL}\x1b[0m\n"
    (episode,), _ = facts(tmp_path, coloured)
    assert_facts(episode, {**VICTIM, "uptime_s": 5864.70844})
    # Not a coloured line: the escape is the name's own (the list shows it escaped).
    named = KILL.replace("(llama-server)", "(ll\x1b[2Jama)")
    (episode,), _ = facts(tmp_path, f"[ 5864.708440] {named}\n")
    assert episode["victim"]["comm"] == "ll\x1b[2Jama"


FAST_PATH_TEXTS = {
    **{f"time of day: {k}": v[0] for k, v in TIME_OF_DAY.items()},
    **{f"glued: {k}": v for k, v in GLUED.items()},
    **{f"openvz: {k}": v[0] for k, v in OPENVZ.items()},
    "nohang named before": NOHANG.format(pid=12297),
    "old report": OLD_REPORT,
    # Cut before its header, its trigger named by its CPU line: the chunk scan reads back the
    # lines it skipped before the report's first line it handles (sources/bigfile.py).
    "headerless trigger": TRACE.format(frame="dump_header", kill=KILL),
}


@pytest.mark.parametrize("text", FAST_PATH_TEXTS.values(), ids=FAST_PATH_TEXTS.keys())
def test_the_chunk_scan_reads_these_shapes_alike(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("hyperscan", reason="the chunk scan needs hyperscan")
    from oomtrace.sources import bigfile

    monkeypatch.setattr(bigfile, "HEAD_LINES", 1)
    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "0")
    fast = facts(tmp_path, text)
    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", str(1 << 60))
    full = facts(tmp_path, text)
    assert fast[0] == full[0]
    assert fast[1]["incidents"] == full[1]["incidents"]


def test_a_header_quoted_after_its_kill_is_that_kills_header(tmp_path: Path) -> None:
    text = f"13:12:12  {KILL}\n13:12:12  dashboard-servi invoked oom-killer\n"
    (episode,), _ = facts(tmp_path, text)
    assert_facts(episode, {**VICTIM, "trigger": "dashboard-servi"})
    # A header with a report of its own after a cut report is the next report's.
    text = f"[ 5864.708440] {KILL}\n[ 5864.708900] {HEADER}\n[ 5864.709000] Mem-Info:\n"
    first, second = facts(tmp_path, text)[0]
    assert first["trigger"] is None and second["trigger"]["comm"] == "dashboard-servi"


def test_a_header_after_a_kill_with_its_report_before_it_opens_the_next_report(tmp_path: Path) -> None:
    """Issue 38: in a cascade the kernel prints the next report's header at once after a kill.
    A kill with its report body before it (Mem-Info, the tasks table) is complete: the header
    after it is the next report's, not the kill's. Here the RHEL 6 fixture's report, cut before
    its header (as a paste that starts mid-report), then the next report's header."""
    lines = (ROOT / "fixtures" / "rhel6_2.6.32_messages" / "kernel.log").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("kernel: Mem-Info:"))
    kill = next(i for i, line in enumerate(lines) if "Killed process 4417" in line)
    header = "Mar  3 02:14:07 db01 kernel: named invoked oom-killer: gfp_mask=0x201da, order=0, oom_adj=0, oom_score_adj=0"
    text = "\n".join([*lines[start : kill + 1], header]) + "\n"
    episodes, _ = facts(tmp_path, text)
    assert [(_actual(e, "victim"), _actual(e, "trigger")) for e in episodes] == [
        ("java", None),
        (None, "named"),
    ]
    # A kill line alone, the header quoted after it: still that kill's (a write-up's order).
    text = f"{lines[kill]}\n{header}\n"
    (episode,), _ = facts(tmp_path, text)
    assert (_actual(episode, "victim"), _actual(episode, "trigger")) == ("java", "named")


@pytest.mark.parametrize(
    ("case", "victim", "next_trigger"),
    [
        # Issue 38's two: the kill with its tasks table before it, the next header at once.
        ("kern-rhel6-sniproxy-then-named", "sniproxy", "named"),
        ("kern-sparc64-stress-ng-then-journald", "stress-ng", "systemd-journal"),
        # A kill line alone (its report cut off above), then a header with a body of its own.
        ("kern-mips-openwrt-mwan3rtmon-then-mwan3rtmon", "mwan3rtmon", "mwan3rtmon"),
        ("old-odoo-el6-python3-then-mysqld", "python3", "mysqld"),
    ],
)
def test_in_a_real_cascade_the_header_after_a_kill_is_the_next_reports(
    case: str, victim: str, next_trigger: str
) -> None:
    """Issue 38 part 1, on the real pastes: none of these kills' own headers is in the text, so
    each kill's trigger is not known, and the header after it opens the next report (the old
    reading told sniproxy as killed on behalf of named, and named's report was gone)."""
    log = ROOT / "tests" / "realworld" / "cases" / case / "input.txt"
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC")
    first, second, *_ = json.loads(result.stdout)["episodes"]
    assert (_actual(first, "victim"), _actual(first, "trigger")) == (victim, None)
    assert _actual(second, "trigger") == next_trigger


def test_seed_002_a_zone_line_quoted_after_its_kill_says_that_zones_cache_was_drained() -> None:
    """Issue 39: `Node 0 Normal free:29852kB ... active_file:32kB inactive_file:720kB` quoted
    after the kill, with no Mem-Info around it, is read: the page cache of that zone was drained,
    and the story says one zone, never the whole machine's RAM."""
    log = seed("002")
    for form in ("text", "markdown", "json"):
        why = run("why", "ds4-server", "-k", str(log), "--format", form)
        assert why.exit_code == 0, why.output
        said = " ".join(why.stdout.replace("\\_", "_").split())
        assert (
            "the page cache was drained in zone Node 0 Normal (active_file 32 KiB, inactive_file 720 KiB)"
            in said
        )
        assert "this is one zone, not the whole machine" in said
        # No machine-wide figure the line does not give.
        for false in ("page cache was down to", "RAM at the kill", "% of RAM", "min watermark"):
            assert false not in said
    markdown = run("why", "ds4-server", "-k", str(log), "--format", "markdown").stdout
    assert "| memory | at the kill |" not in markdown  # no empty table of figures
    assert "lines 89–91" in markdown


ZONE = (
    "Node 0 Normal free:29852kB min:33792kB active_file:{active}kB inactive_file:720kB "
    "present:125829120kB managed:{managed}kB"
)


@pytest.mark.parametrize(
    ("lines", "drained"),
    [
        # The zone line right after a lone kill: its report's.
        ([KILL, ZONE.format(active=32, managed=123405340)], True),
        # Before the kill, with no Mem-Info header: its report's too.
        ([ZONE.format(active=32, managed=123405340), KILL], True),
        # A zone of 120 GiB with 2 GiB of cache is not drained.
        ([KILL, ZONE.format(active=2 << 20, managed=123405340)], False),
        # A line of prose between: not the kill's.
        ([KILL, "and then the zone line:", ZONE.format(active=32, managed=123405340)], False),
        # A DMA zone holds no cache at all: never a finding.
        ([KILL, ZONE.format(active=0, managed=15360).replace("Normal", "DMA")], False),
    ],
)
def test_zone_lines_without_mem_info(lines: list[str], drained: bool, tmp_path: Path) -> None:
    log = tmp_path / "paste.txt"
    log.write_text("\n".join(f"13:12:12 {line}" for line in lines) + "\n")
    why = run("why", "llama-server", "-k", str(log))
    assert why.exit_code == 0, why.output
    assert ("page cache was drained in zone" in " ".join(why.stdout.split())) is drained


def test_a_zone_line_after_a_kill_with_its_report_is_the_next_reports(tmp_path: Path) -> None:
    """A kill with a body is complete: a zone line after it is not its report's (the cascade)."""
    mem_info = "Mem-Info:\nactive_anon:100 inactive_anon:100 active_file:90000 inactive_file:90000 free:500"
    log = tmp_path / "kern.log"
    log.write_text(f"{mem_info}\n{KILL}\n" + ZONE.format(active=32, managed=123405340) + "\n")
    why = run("why", "llama-server", "-k", str(log))
    assert why.exit_code == 0, why.output
    assert "drained in zone" not in " ".join(why.stdout.split())


# ---- repeats of a warning said without the line itself (issue 39) ---------------------------
NVRM_LINE = (
    "NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) "
    "returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1359"
)
SYSLOG_KILL = f"Nov 14 13:12:12 spark-01 kernel: {KILL}"
ALLOC_FAILURE = (
    "ds4-server: page allocation failure: order:9, mode:0x40cc0(GFP_KERNEL|__GFP_COMP), "
    "nodemask=(null),cpuset=/,mems_allowed=0"
)


def test_seed_000_counts_the_pasted_repeats_line_as_the_fixture_counts_its_second_line() -> None:
    """`13:09:05  NVRM: (repeats)` after the NV_ERR_NO_MEMORY line is its second time, as the
    fixture's two NVRM lines are (fixtures/seed000_llama_server_gb10: '2 times')."""
    log = seed("000")
    (incident,) = listed(log)["incidents"]
    assert incident["earliest_warning"]["count"] == 2
    why = run("why", "llama-server", "-k", str(log)).stdout
    said = " ".join(why.split())
    assert "(3m13s before the kill, 2 times)" in said
    assert "(×2, last 13:09:05)" in said


@pytest.mark.parametrize(
    ("lines", "count"),
    [
        # rsyslog held back 3 more of the same line.
        (
            [
                f"Nov 14 13:08:59 spark-01 kernel: {NVRM_LINE}",
                f"Nov 14 13:09:05 spark-01 kernel: message repeated 3 times: [ {NVRM_LINE}]",
                SYSLOG_KILL,
            ],
            4,
        ),
        # A paste's (repeats) after another prefix's line repeats nothing.
        (
            [
                f"Nov 14 13:08:59 spark-01 kernel: {NVRM_LINE}",
                "Nov 14 13:09:05 spark-01 kernel: Xorg: (repeats)",
                SYSLOG_KILL,
            ],
            1,
        ),
        # A rate limit's count before the warning it lets through: that many more of it.
        (
            [
                "Nov 14 13:08:59 spark-01 kernel: warn_alloc: 5 callbacks suppressed",
                f"Nov 14 13:08:59 spark-01 kernel: {ALLOC_FAILURE}",
                SYSLOG_KILL,
            ],
            6,
        ),
        # ... not when another line stands between them.
        (
            [
                "Nov 14 13:08:59 spark-01 kernel: warn_alloc: 5 callbacks suppressed",
                "Nov 14 13:08:59 spark-01 kernel: usb 1-1: new high-speed USB device number 3",
                f"Nov 14 13:08:59 spark-01 kernel: {ALLOC_FAILURE}",
                SYSLOG_KILL,
            ],
            1,
        ),
    ],
    ids=["rsyslog message repeated", "another prefix", "callbacks suppressed", "not the next line"],
)
def test_repeats_said_without_the_line_count(lines: list[str], count: int, tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text("\n".join(lines) + "\n")
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC", "--year", "2026")
    assert result.exit_code == 0, result.output
    (incident,) = json.loads(result.stdout)["incidents"]
    assert incident["earliest_warning"]["count"] == count


def test_a_repeat_after_the_kill_is_not_counted_before_it(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text(
        f"Nov 14 13:08:59 spark-01 kernel: {NVRM_LINE}\n{SYSLOG_KILL}\n"
        "Nov 14 13:12:20 spark-01 kernel: NVRM: (repeats)\n"
    )
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC", "--year", "2026")
    (incident,) = json.loads(result.stdout)["incidents"]
    assert incident["earliest_warning"]["count"] == 1


def test_syslog_records_joined_by_one_space_are_split_and_the_old_kill_line_is_told_as_it_is() -> None:
    """Issue 38's corpus: a vendor page that lost its line breaks joined four RHEL 4 records with
    one space each. The victim was read as `jserver). Jul 19 05:19:24 asl131 kernel: Out of
    Memory: …` (the name ran to the line's last parenthesis), a false name; and the story said the
    kill line was missing, though 2.6's kill line is there and gives only the pid and the name."""
    case = (
        ROOT
        / "tests"
        / "realworld"
        / "cases"
        / "wide-aslab-rhel4-numa-kill-lines-joined-one-line"
        / "input.txt"
    )
    document = json.loads(run("list", "-k", str(case), "-f", "json", "--tz", "UTC", "--year", "2026").stdout)
    assert [(e["victim"]["comm"], e["victim"]["pid"], e["time"]) for e in document["episodes"]] == [
        ("jserver", 2368, "2026-07-19T05:19:24+00:00")
    ]
    said = " ".join(run("why", "jserver", "-k", str(case), "--tz", "UTC", "--year", "2026").stdout.split())
    assert "Jul 19" not in said.split("Read ")[0]
    assert "its sizes are not in the log (its kill line gives only its pid and name)" in said
    assert "no kill line" not in said


def test_a_masked_gfp_mask_is_no_mask_not_its_first_digits() -> None:
    """A vendor's doc masked the mask (`gfp_mask=0x62****(GFP_HIGHUSER_MOVABLE|__GFP_ZERO)`): it
    was read as 0x62, a value the kernel never printed, and the order after it was lost."""
    case = (
        ROOT / "tests" / "realworld" / "cases" / "wide-alibaba-ja-doc-line-numbers-masked-gfp" / "input.txt"
    )
    document = json.loads(run("list", "-k", str(case), "-f", "json", "--tz", "UTC").stdout)
    (episode,) = document["episodes"]
    assert episode["trigger"]["gfp_mask"] is None and episode["trigger"]["order"] == 0
    assert episode["trigger"]["comm"] == "test"


def test_a_unit_record_wrapped_inside_its_units_name_names_the_whole_unit(tmp_path: Path) -> None:
    # An 80-column terminal cut systemd's line inside the scope's name: its rest alone read as a
    # record of a unit named `e5af7579d2.scope`.
    text = (
        "Dec 18 19:34:56 user-desktop systemd[1837]: vte-spawn-dbb4a75e-031f-480d-924b-5d\n"
        "e5af7579d2.scope: systemd-oomd killed 12 process(es) in this unit.\n"
    )
    (episode,), _ = facts(tmp_path, text)
    assert episode["unit"] == "vte-spawn-dbb4a75e-031f-480d-924b-5de5af7579d2.scope"
    # A whole line before (it ends with a space, or is short) is never part of the name.
    for before in (
        "Dec 18 19:34:56 user-desktop systemd[1837]: Started x.scope - Terminal started by gnome.\n",
        "Started app-gnome-firefox-1234.scope - Application launched by gnome-shell.\n",  # -o cat
    ):
        (episode,), _ = facts(tmp_path, before + text.split("\n", 1)[1])
        assert episode["unit"] == "e5af7579d2.scope"


def test_a_prefix_alone_on_its_line_gives_the_next_lines_message_its_host(tmp_path: Path) -> None:
    # A mail re-flowed right after the prefix (linux-mm, tests/realworld/cases/
    # old-lkml-wrapped-old-vs-new-format): the summary on the next line is newserver's.
    from tests.realworld.score import CASES

    result = run("list", "-k", str(CASES / "old-lkml-wrapped-old-vs-new-format" / "input.txt"), "-f", "json")
    hosts = [e["host"] for e in json.loads(result.stdout)["episodes"]]
    assert hosts == ["newserver", "oldserver"]


def test_a_kill_line_cut_twice_is_joined_from_its_three_pieces(tmp_path: Path) -> None:
    # A mail re-flowed at 60 columns: `Kill` / `'com...' (17933), uid 10446,` / `oom_score_adj 0
    # ...`: the first two pieces read nothing joined, the three do.
    text = (
        "10-24 14:24:26.342   710   710 I lowmemorykiller: Kill\n"
        "'com.google.android.gms.unstable' (17933), uid 10446,\n"
        "oom_score_adj 0 to free 140528kB rss, 37404kB swap; reason:\n"
        "device is not responding\n"
    )
    (episode,), _ = facts(tmp_path, text)
    assert (episode["killer"], episode["victim"]["comm"], episode["victim"]["pid"]) == (
        "lmkd",
        "com.google.android.gms.unstable",
        17933,
    )
    assert (episode["victim"]["oom_score_adj"], episode["victim"]["rss_kb"]) == (0, 140528)
