"""Issue 41's exits and edges: inputs at the rim of what a log holds (unknown zone names, odd
encodings, clocks that go backwards), each answered in one line or read, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run

KILL_LINE = (
    "Out of memory: Killed process 4242 (llama) total-vm:1000kB, anon-rss:500kB, file-rss:0kB, "
    "shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:0"
)


@pytest.mark.parametrize("stamp", ["[14/11/2026 13:12:12 XYZ] ", "[14.11.2026 13:12:12 BB] "])
def test_a_zone_name_nobody_knows_is_no_time_and_no_warning(tmp_path: Path, stamp: str) -> None:
    """`[… BB]` printed dateutil's UnknownTimezoneWarning on stderr, an internal error under
    PYTHONWARNINGS=error. A clock in a zone no one knows gives no instant (never the clock read
    in another zone); the kill is read all the same."""
    log = tmp_path / "zone.log"
    log.write_text(stamp + KILL_LINE + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "oomtrace", "list", "-k", str(log), "-f", "json", "--tz", "UTC"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "error"},
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    (episode,) = json.loads(done.stdout)["episodes"]
    assert episode["victim"]["pid"] == 4242 and episode["time"] is None
    refused = run("list", "-k", str(log), "--since", "2026-11-14 10:00 BB")
    assert refused.exit_code == 2 and "cannot read the time" in refused.stderr


@pytest.mark.parametrize("fixture", ["seed000_llama_server_gb10", "real_memcg_v1_6.18"])
def test_lines_ended_by_a_lone_cr_before_lf_ended_ones_are_lines(tmp_path: Path, fixture: str) -> None:
    """Issue 41: a file whose first lines end with a lone CR (a serial console, an old Mac
    editor) and the rest with LF lost its header, Mem-Info and warnings, and read the trigger as
    one name of all the CR-joined lines. A CR is a line break where a prefix follows it."""
    from tests.conftest import FIXTURES

    lines = (FIXTURES / fixture / "kernel.log").read_text().split("\n")
    header = next(i for i, line in enumerate(lines) if "invoked oom-killer" in line)
    mixed = tmp_path / "mixed.log"
    mixed.write_bytes(("\r".join(lines[: header + 3]) + "\n" + "\n".join(lines[header + 3 :])).encode())
    clean = tmp_path / "clean.log"
    clean.write_text("\n".join(lines))

    def facts(log: Path) -> tuple[object, ...]:
        document = json.loads(
            run("list", "-k", str(log), "-f", "json", "--tz", "UTC", "--year", "2026").stdout
        )
        episodes = [
            {k: v for k, v in e.items() if k not in ("lines", "line", "id", "source")}
            for e in document["episodes"]
        ]
        return episodes, [w["kind"] for w in document["warnings"]], document["source"]["problems"]

    episodes, warnings, problems = facts(mixed)
    assert (episodes, warnings, problems) == facts(clean)
    assert episodes[0]["trigger"]["comm"] and "\r" not in episodes[0]["trigger"]["comm"]


def test_the_span_read_is_from_the_earliest_time_to_the_latest(tmp_path: Path) -> None:
    """Issue 41: the summary's "to" was the last line's time: a line stamped 09:00 after a kill
    at 13:12 (a clock set back) made it "from 12:58 to 09:00"."""
    from tests.conftest import FIXTURES

    log = tmp_path / "back.log"
    seed = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_text()
    log.write_text(seed + "Nov 14 09:00:00 spark-01 kernel: r8169 0000:01:00.0 enP7s7: Link is Up\n")
    said = " ".join(run("list", "-k", str(log), "--tz", "UTC", "--year", "2026").stdout.split())
    assert "78 lines from 2026-11-14 09:00:00+00:00 to 2026-11-14 13:14:02+00:00." in said


def test_boot_time_does_not_date_a_later_boot_and_says_so(tmp_path: Path) -> None:
    """Issue 41: after the uptime went back (a reboot in a concatenated dmesg), a later kill lost
    its wall time without a word. --boot-time is the first boot's: the later boot's kill has no
    wall time (never the first boot's time plus its uptime), and the summary says why."""
    log = tmp_path / "dmesg.log"
    log.write_text(
        f"[ 5000.000000] {KILL_LINE}\n[   10.000000] Linux version 6.8.0\n"
        f"[  310.000000] {KILL_LINE.replace('4242', '4243')}\n"
    )
    result = run("list", "-k", str(log), "--boot-time", "2026-11-14 08:36:40", "--tz", "UTC", "-f", "json")
    document = json.loads(result.stdout)
    assert [(e["victim"]["pid"], e["time"]) for e in document["episodes"]] == [
        (4242, "2026-11-14T10:00:00+00:00"),
        (4243, None),
    ]
    (problem,) = [p["problem"] for p in document["source"]["problems"]]
    assert problem.startswith("the uptime went back at line 2 (uptime 10 s): a later boot")
    assert "no wall time" in problem
