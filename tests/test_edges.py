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
