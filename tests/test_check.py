"""`oomtrace check`'s cursor (issues 23 and 26): each kill said once, whatever rotates, reboots,
is read in between, is stamped earlier or not at all, or kills the run mid-write."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import FIXTURES, run

SEED002 = (FIXTURES / "seed002_ds4_server_gb10" / "kernel.log").read_text()  # 4 kills, Nov 19
# seed 000's kill, moved a day past seed 002's: the kill that arrives later.
LATER = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_text().replace("Nov 14", "Nov 20")
UPTIME_ONLY = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_text()  # [   53.459428] stamps
BOOT_LINE = "[    0.000000] Linux version 6.18.0 (oomtrace-test) #1 SMP\n"


def check(cursor: Path, *logs: Path) -> tuple[int, str]:
    args = [arg for log in logs for arg in ("-k", str(log))]
    result = run("check", "--cursor-file", str(cursor), *args, "--tz", "UTC", "--year", "2026")
    assert result.stderr == ""
    (line,) = result.stdout.splitlines()
    return result.exit_code, line


def test_a_run_over_another_log_does_not_make_the_next_repeat_a_kill(tmp_path: Path) -> None:
    cursor, log, other = tmp_path / "c.json", tmp_path / "kern.log", tmp_path / "other.log"
    log.write_text(SEED002)
    other.write_text(BOOT_LINE)
    assert check(cursor, log) == (0, "no new OOM kill")  # the first run: history, not news
    assert check(cursor, other) == (0, "no new OOM kill")
    # Before: that run wrote "seen": [] and this one said the ds4-server kill again, exit 1.
    assert check(cursor, log) == (0, "no new OOM kill")
    saved = json.loads(cursor.read_text())
    assert saved["schema"] == "oomtrace/1" and saved["source"] == "check" and len(saved["said"]) == 4


def test_rotation_kern_log_to_kern_log_1(tmp_path: Path) -> None:
    cursor, log, rotated = tmp_path / "c.json", tmp_path / "kern.log", tmp_path / "kern.log.1"
    log.write_text(SEED002)
    assert check(cursor, log)[0] == 0
    log.rename(rotated)  # logrotate: the old kills now at kern.log.1, a fresh kern.log
    log.write_text(BOOT_LINE)
    assert check(cursor, log) == (0, "no new OOM kill")
    assert check(cursor, log, rotated) == (0, "no new OOM kill")
    log.write_text(BOOT_LINE + LATER)
    code, line = check(cursor, rotated, log)
    assert (
        code == 1
        and line.startswith("OOM kill: llama-server (pid 1966928) kernel-oom")
        and "more" not in line
    )
    assert check(cursor, rotated, log) == (0, "no new OOM kill")
    # The rotated file read alone, then the new one alone: neither says an old kill again.
    assert check(cursor, rotated) == (0, "no new OOM kill")
    assert check(cursor, log) == (0, "no new OOM kill")


def test_a_reboot_and_kills_without_a_wall_time(tmp_path: Path) -> None:
    # Uptime-only dmesg (issue 26): before, a kill without a wall time was never news.
    cursor, before, after = tmp_path / "c.json", tmp_path / "boot-1.txt", tmp_path / "boot-0.txt"
    before.write_text(UPTIME_ONLY)
    assert check(cursor, before)[0] == 0
    # The next boot: the same service killed again at the same uptime, as another pid.
    after.write_text(UPTIME_ONLY.replace("2110", "2310"))
    code, line = check(cursor, after)
    assert code == 1 and line.startswith("OOM kill: oomprobe-hog (pid 2310)"), line
    assert check(cursor, after) == (0, "no new OOM kill")
    assert check(cursor, before) == (0, "no new OOM kill")
    # And a boot where the same pid was killed earlier in its uptime.
    earlier = UPTIME_ONLY.replace("[   53.4", "[   41.4").replace("[   53.", "[   41.")
    after.write_text(earlier)
    code, line = check(cursor, after)
    assert code == 1 and line.startswith("OOM kill: oomprobe-hog (pid 2110)"), line


def test_a_kill_stamped_before_the_last_one_said_is_news(tmp_path: Path) -> None:
    # A clock set back, or another host's clock behind (issue 26): before, "no new OOM kill".
    cursor, log = tmp_path / "c.json", tmp_path / "kern.log"
    log.write_text(SEED002)
    assert check(cursor, log)[0] == 0
    skewed = LATER.replace("Nov 20", "Nov 10")  # nine days before seed 002's kills
    log.write_text(SEED002 + skewed)
    code, line = check(cursor, log)
    assert code == 1 and line.startswith("OOM kill: llama-server (pid 1966928)")
    assert check(cursor, log) == (0, "no new OOM kill")


def test_a_cursor_of_the_older_form_is_read_once_and_rewritten(tmp_path: Path) -> None:
    cursor, log = tmp_path / "c.json", tmp_path / "kern.log"
    older = {
        "schema": "oomtrace/1",
        "source": "check",
        "cursor": "",
        "last_kill": "2026-11-19T21:47:35+00:00",
    }
    cursor.write_text(json.dumps({**older, "seen": []}))
    log.write_text(SEED002 + LATER)
    code, line = check(cursor, log)
    assert code == 1 and line.startswith("OOM kill: llama-server") and "more" not in line
    assert "said" in json.loads(cursor.read_text()) and "last_kill" not in json.loads(cursor.read_text())
    assert check(cursor, log) == (0, "no new OOM kill")


# A check run that stops for good inside its cursor write: os.fsync (called between writing the
# temporary file and renaming it) says so and sleeps, and the test kills it with SIGKILL there.
STALL_IN_WRITE = """
import os, sys, time
real_fsync = os.fsync
def stall(fd):
    real_fsync(fd)
    print("in the cursor write", file=sys.stderr, flush=True)
    time.sleep(120)
os.fsync = stall
from oomtrace.cli import main
sys.argv = ["oomtrace", *sys.argv[1:]]
main()
"""


def test_kill_9_mid_write_leaves_the_previous_cursor_whole(tmp_path: Path) -> None:
    cursor, log = tmp_path / "c.json", tmp_path / "kern.log"
    log.write_text(SEED002)
    assert check(cursor, log)[0] == 0
    before = cursor.read_text()
    log.write_text(SEED002 + LATER)
    args = ["check", "--cursor-file", str(cursor), "-k", str(log), "--tz", "UTC", "--year", "2026"]
    process = subprocess.Popen(
        [sys.executable, "-c", STALL_IN_WRITE, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:
        assert process.stderr.readline() == "in the cursor write\n"
        partial = [p for p in tmp_path.iterdir() if p.name.startswith(".oomtrace-")]
        assert partial, "the run was not inside the write"
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert cursor.read_text() == before  # whole, and the old one
    # NPD got no answer from the killed run; the next run says the new kill, once.
    code, line = check(cursor, log)
    assert code == 1 and line.startswith("OOM kill: llama-server (pid 1966928)")
    assert check(cursor, log) == (0, "no new OOM kill")


def test_an_unreadable_cursor_is_unknown_not_a_fresh_start(tmp_path: Path) -> None:
    cursor, log = tmp_path / "c.json", tmp_path / "kern.log"
    log.write_text(SEED002)
    cursor.write_text('{"said": ["ab')  # cut, as no write of ours leaves it
    code, line = check(cursor, log)
    assert code == 2 and line.startswith("unknown: cannot read --cursor-file") and len(line) <= 79
    assert cursor.read_text() == '{"said": ["ab'


def test_an_empty_cursor_file_is_a_first_run_and_a_deep_one_is_refused(tmp_path: Path) -> None:
    """Issue 41: a cursor file made with `touch` is a first run (history, not news), not an
    error for ever; `[` nested 100,000 deep was an internal error (RecursionError)."""
    cursor, log = tmp_path / "c.json", tmp_path / "kern.log"
    log.write_text(SEED002)
    cursor.write_text("")
    assert check(cursor, log) == (0, "no new OOM kill")
    assert len(json.loads(cursor.read_text())["said"]) == 4
    cursor.write_text("[" * 100_000)
    code, line = check(cursor, log)
    assert code == 2 and line.startswith("unknown: cannot read --cursor-file")
    assert cursor.read_text() == "[" * 100_000


def _loop(tmp_path: Path, kills: int) -> Path:
    from datetime import timedelta

    from tests.test_charts import _crash_loop

    return _crash_loop(tmp_path / f"loop-{kills}.log", kills, timedelta(minutes=7))


def test_a_line_that_could_not_be_written_leaves_the_cursor_before_its_kill(tmp_path: Path) -> None:
    """Issue 41: `check` with standard output closed saved the cursor though its line was never
    written, so the kill was never said. The cursor is saved only once the line is out."""
    import shutil

    cursor = tmp_path / "cursor.json"
    log = tmp_path / "kern.log"
    shutil.copy(_loop(tmp_path, 1), log)
    command = [sys.executable, "-m", "oomtrace", "check", "--cursor-file", str(cursor), "-k", str(log)]
    command += ["--year", "2026"]
    assert subprocess.run(command, capture_output=True, check=False).returncode == 0  # the first run
    shutil.copy(_loop(tmp_path, 2), log)  # a second kill since
    closed = subprocess.run(["/bin/sh", "-c", '"$@" >&-', "sh", *command], capture_output=True, text=True)
    assert closed.returncode == 2 and "standard output is closed" in closed.stderr
    again = subprocess.run(command, capture_output=True, text=True, check=False)
    assert again.returncode == 1 and again.stdout.startswith("OOM kill: llama-server (pid 1966929)")


def test_two_runs_on_one_cursor_take_turns(tmp_path: Path) -> None:
    """Issue 41: two `check` runs at once read the same cursor; the later save dropped the
    earlier's kill, which was said again. A run holds the cursor from its read to its save."""
    from oomtrace import check

    cursor = tmp_path / "cursor.json"
    command = [sys.executable, "-m", "oomtrace", "check", "--cursor-file", str(cursor)]
    command += ["-k", str(_loop(tmp_path, 1)), "--year", "2026"]
    with check.locked(str(cursor)):
        waiting = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(2.0)
        assert waiting.poll() is None  # it waits for the run that holds the cursor
    assert waiting.wait(timeout=60) == 0
    assert cursor.exists()


FORK_BOMB = (
    Path(__file__).parent / "realworld" / "cases" / "k8s-docker-fork-bomb-syslog-vmalloc" / "input.txt"
)


def test_a_killers_record_in_a_text_log_is_said_unverified_and_raises_no_alarm(tmp_path: Path) -> None:
    """Issue 41: `logger -t earlyoom 'sending SIGKILL to process 1 ... "systemd"'` lands in syslog
    as earlyoom's own line would; a text log cannot prove its sender. It is no new kill for check
    (before: exit 1, 'OOM kill: systemd (pid 1)'), and why says it is unverified."""
    cursor, log = tmp_path / "c.json", tmp_path / "syslog"
    kernel = "".join(f"{line}\n" for line in FORK_BOMB.read_text().splitlines() if " kernel: " in line)
    log.write_text(kernel)
    assert check(cursor, log) == (0, "no new OOM kill")
    log.write_text(
        kernel
        + 'May 15 23:20:01 ubuntu-s-1vcpu-2gb-ams3-01 earlyoom[4242]: sending SIGKILL to process 1 uid 0 "systemd": '
        "oom_score 900, VmRSS 100 MiB\n"
    )
    assert check(cursor, log) == (0, "no new OOM kill")
    why = run("why", "systemd", "-k", str(log), "--tz", "UTC", "--year", "2026", "-f", "markdown")
    words = " ".join(why.stdout.replace("**", "").split())
    assert "systemd (pid 1) was killed by the userspace OOM killer earlyoom" in words
    assert "says a record that is unverified: the log cannot prove who wrote it" in words
    assert "not counted as a kill by check, export or watch's hooks" in words
