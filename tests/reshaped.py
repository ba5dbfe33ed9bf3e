"""Logs shaped like real ones: the shipped fixtures' kernel lines, re-stamped and re-named.

Each builder takes the lines of a real report (fixtures/real_memcg_v1_6.18, a kill captured on
this project's CI machine; fixtures/seed002_ds4_server_gb10, a DGX Spark's global OOM) and moves
them to another uptime, cgroup, pid or name, so a test can set two shortages side by side.
"""

from __future__ import annotations

import re

from tests.conftest import FIXTURES

BOOT = "2026-11-29T09:51:05+00:00"
"""The boot time of the CI machine's log: uptimes of these lines read as wall time with it."""

_MEMCG_LOG = FIXTURES / "real_memcg_v1_6.18" / "kernel.log"
_GLOBAL_LOG = FIXTURES / "seed002_ds4_server_gb10" / "kernel.log"
_NVRM_LOG = FIXTURES / "seed000_llama_server_gb10" / "kernel.log"
_UPTIME = re.compile(r"^\[\s*(\d+\.\d+)\]")


def _restamped(lines: list[str], at_s: float) -> list[str]:
    """Lines moved so the first is at uptime `at_s`, their spacing kept."""
    first = float(_UPTIME.match(lines[0]).group(1))  # type: ignore[union-attr]
    out = []
    for line in lines:
        uptime = float(_UPTIME.match(line).group(1))  # type: ignore[union-attr]
        out.append(_UPTIME.sub(f"[{at_s + uptime - first:12.6f}]", line, count=1))
    return out


def memcg_report(
    at_s: float, cgroup: str = "/oomprobe", pid: int = 2110, comm: str = "oomprobe-hog", failcnt: int = 240
) -> list[str]:
    """The CI machine's memory cgroup v1 OOM report, in `cgroup`, killing `comm` (`pid`)."""
    report = _MEMCG_LOG.read_text().splitlines()[4:]
    text = "\n".join(report)
    text = text.replace("/oomprobe", cgroup).replace("oomprobe-hog", comm).replace("2110", str(pid))
    text = text.replace("failcnt 240", f"failcnt {failcnt}")
    return _restamped(text.splitlines(), at_s)


def global_report(at_s: float, pid: int = 124531, comm: str = "ds4-server") -> list[str]:
    """seed 002's first global OOM report (ds4-server killed), in dmesg's uptime stamps."""
    lines = _GLOBAL_LOG.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "invoked oom-killer" in line)
    end = next(i for i, line in enumerate(lines) if "Killed process" in line)
    body = [re.sub(r"^\[[^\]]*\] ", "", line) for line in lines[start : end + 1]]
    text = "\n".join(body).replace("124531", str(pid)).replace("ds4-server", comm)
    return [f"[{at_s + i * 0.0001:12.6f}] {line}" for i, line in enumerate(text.splitlines())]


def nvrm_line(at_s: float) -> str:
    """seed 000's NVRM NV_ERR_NO_MEMORY line, at uptime `at_s`."""
    line = next(line for line in _NVRM_LOG.read_text().splitlines() if "NV_ERR_NO_MEMORY" in line)
    return f"[{at_s:12.6f}] " + line.split(" kernel: ", 1)[1]


def xid_line(at_s: float) -> str:
    """seed 004's NVRM Xid 31 line (a GPU page fault: chatter, not a memory warning), at `at_s`."""
    log = FIXTURES / "seed004_tensorfold_cotenant_gb10" / "kernel.log"
    line = next(line for line in log.read_text().splitlines() if "NVRM: Xid" in line)
    return f"[{at_s:12.6f}] " + line.split(" kernel: ", 1)[1]
