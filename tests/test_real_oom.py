"""A real kernel OOM kill, made inside a 64 MiB memory cgroup, read back through the real dmesg.

Only that cgroup runs out of memory: the child is moved into it before it allocates anything,
and its limit (memory and memory+swap) is 64 MiB.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import kernel_log_skip_reason, run, tagged_name

LIMIT = 64 * 1024 * 1024
CHILD = r"""
import ctypes, sys
name = sys.argv[1]
ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: the comm the kernel reports
with open("/proc/self/oom_score_adj", "w") as adj:
    adj.write("200")
print("allocating", flush=True)
held = []
while True:
    held.append(b"x" * (1 << 20))  # bytes filled with data: every page is touched
"""


class MemoryCgroup:
    """A child memory cgroup with a hard limit, on cgroup v1 or v2."""

    def __init__(self, root: Path, version: int, name: str) -> None:
        self.path = root / name
        self.version = version

    def create(self) -> None:
        self.path.mkdir()
        if self.version == 1:
            (self.path / "memory.limit_in_bytes").write_text(str(LIMIT))
            memsw = self.path / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                memsw.write_text(str(LIMIT))
        else:
            (self.path / "memory.max").write_text(str(LIMIT))
            swap = self.path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def remove(self) -> None:
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def _cgroup_root() -> tuple[Path, int] | None:
    v1 = Path("/sys/fs/cgroup/memory")
    if (v1 / "memory.limit_in_bytes").exists() and os.access(v1, os.W_OK):
        return v1, 1
    v2 = Path("/sys/fs/cgroup")
    controllers = v2 / "cgroup.subtree_control"
    if controllers.exists() and "memory" in controllers.read_text() and os.access(v2, os.W_OK):
        return v2, 2
    return None


def _skip_reason() -> str | None:
    # A real kill leaves a real kill report in this machine's kernel log (tagged by its name).
    reason = kernel_log_skip_reason()
    if reason is not None:
        return reason
    if shutil.which("dmesg") is None:
        return "needs dmesg (util-linux)"
    if _cgroup_root() is None:
        return "no writable memory cgroup (v1 /sys/fs/cgroup/memory or v2 with the memory controller)"
    return None


@pytest.mark.realoom
@pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")
def test_a_real_oom_kill_is_found_and_explained(tmp_path: Path) -> None:
    found = _cgroup_root()
    assert found is not None
    root, version = found
    name = tagged_name()
    cgroup = MemoryCgroup(root, version, name)
    cgroup.create()
    server_log = tmp_path / "child.log"
    try:
        with server_log.open("w") as log:
            # Join the cgroup between fork and exec, so every page the interpreter ever
            # touches is charged to the 64 MiB limit.
            child = subprocess.Popen(
                [sys.executable, "-c", CHILD, name],
                stdout=log,
                stderr=log,
                preexec_fn=lambda: cgroup.procs.write_text(str(os.getpid())),
            )
            try:
                child.wait(timeout=120)
            except subprocess.TimeoutExpired:
                child.kill()
                pytest.fail("the child was not OOM-killed within 120 s")
    finally:
        cgroup.remove()
    assert child.returncode == -9, server_log.read_text()

    result = run("why", name, "--format", "json", "--server-log", str(server_log))
    assert result.exit_code == 0, result.output
    story = json.loads(result.stdout)
    episode = story["episode"]
    assert story["cause"] == "cgroup-oom"
    assert episode["victim"]["pid"] == child.pid
    assert episode["victim"]["comm"] == name
    assert episode["victim"]["oom_score_adj"] == 200
    assert 0 < episode["victim"]["anon_rss_kb"] <= LIMIT // 1024
    assert episode["constraint"] == "memcg"
    assert episode["memcg"].endswith(name)
    # No source flags: the system journal where there is one, else the ring buffer through dmesg.
    assert story["source"]["kind"] in ("dmesg", "journal")
    # Uptime was turned into wall time with the boot time from /proc/stat.
    assert episode["time"] is not None
    # Its own log stops with no error, within a few seconds of the kill (btime has 1 s steps).
    assert story["server_log"]["ending"] == "silent"
    assert story["server_log"]["last_time_from"] == "mtime"
    assert abs(story["server_log"]["gap_s"]) < 5
