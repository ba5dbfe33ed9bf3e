"""Bounded runs of the atheris fuzzers: fuzz/fuzz_lines.py, fuzz/fuzz_options.py and
fuzz/fuzz_inputs.py (reading saved logs)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import random
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

RUNS = float(os.environ.get("OOMTRACE_FUZZ_RUNS", "1"))
"""A factor on each target's count of inputs (about 20 s of each on a CI machine): fuzz longer by
hand with OOMTRACE_FUZZ_RUNS=50 (and another -seed) to look for new finds."""
LINES_RUNS, OPTIONS_RUNS, INPUTS_RUNS = 2500, 2000, 4000
"""About 20 s, 10 s and 20 s here (2026-12-02), the starting seeds included."""
LIMIT_S = 180
"""Each run stops after this long even if its inputs are not all tried (a slow machine)."""


NEEDS_ATHERIS = pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None, reason="atheris is not installed (x86_64 wheels only)"
)


def _fuzz(target: str, seeds: Path, runs: int, max_len: int) -> None:
    """A bounded atheris run of fuzz/<target> from the seeds folder (libFuzzer adds its finds).

    A count of inputs from a fixed seed and fixed starting seeds, not a time: with a time, a faster
    CI machine went further along the sequence than any run here and met a find none had reached.
    libFuzzer's own timing still makes two runs part after a few hundred inputs, so the count
    bounds how far CI strays from what was tried here; it does not make the runs identical."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "fuzz" / target),
            f"-runs={int(runs * RUNS)}",
            f"-max_total_time={LIMIT_S}",
            # What a seed's mutations find is fixed, then seeded in fuzz/seeds/ or input_seeds().
            "-seed=20261202",
            "-rss_limit_mb=2048",
            f"-max_len={max_len}",
            str(seeds),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=seeds.parent,
        timeout=LIMIT_S + 120,
    )
    # What failed, not the last of libFuzzer's progress lines (they hid the exception in CI).
    failure = done.stderr[done.stderr.find("=== Uncaught Python exception") :]
    assert done.returncode == 0, failure[:4000] or done.stderr[-4000:]


@NEEDS_ATHERIS
def test_fuzz_the_line_pipeline(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for log in FIXTURES.glob("*/kernel.log"):
        (seeds / log.parent.name).write_bytes(log.read_bytes())
    for paste in (ROOT / "tests" / "realworld" / "cases").glob("*/input.txt"):
        (seeds / paste.parent.name).write_bytes(paste.read_bytes())
    _fuzz("fuzz_lines.py", seeds, LINES_RUNS, 8192)


@NEEDS_ATHERIS
def test_fuzz_the_option_values(tmp_path: Path) -> None:
    """Seeded with issue 26's inputs (fuzz/seeds/options/): each an answer or a one-line error."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for seed in (ROOT / "fuzz" / "seeds" / "options").iterdir():
        (seeds / seed.name).write_bytes(seed.read_bytes())
    _fuzz("fuzz_options.py", seeds, OPTIONS_RUNS, 512)


def input_seeds(seeds: Path) -> None:
    """The inputs issues 23, 26 and 41 found mishandled, most made from seed 000's report."""
    import zstandard

    report = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_bytes()
    kill = (
        b"Out of memory: Killed process 4242 (llama) total-vm:1000kB, anon-rss:500kB, file-rss:0kB, "
        b"shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:0"
    )
    packed = gzip.compress(report)
    flipped = bytearray(packed)
    flipped[len(flipped) // 2] ^= 0x01
    flushed = zlib.compressobj(6, zlib.DEFLATED, 31)
    zstd = zstandard.ZstdCompressor(write_checksum=True).compress(report)
    record = {
        "timeUnixNano": "1794661083118000000",
        "body": {"stringValue": "Out of memory: Killed process 1"},
    }
    otlp = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record] * 40}]}]}).encode()
    for name, data in {
        "plain": report,
        "gzip": packed,
        "gzip-bit-flipped": bytes(flipped),
        "gzip-cut": packed[: len(packed) // 2],
        "gzip-trailing-bytes": packed + b"not gzip",
        "zstd": zstd,
        "zstd-cut": zstd[: len(zstd) // 2],
        "utf-16": report.decode().encode("utf-16"),
        "utf-32": report.decode().encode("utf-32"),
        "cr-only": report.replace(b"\n", b"\r"),
        "empty-lines": b"\n" * 3000 + report + b"\r\n" * 200 + b"\n" * 50,
        "otlp-line": otlp + b"\n",
        # Cut with every line flushed: the decompressor gives them all before it tells of the cut.
        "gzip-flushed-no-end": flushed.compress(report) + flushed.flush(zlib.Z_SYNC_FLUSH),
        "random": random.Random(20261202).randbytes(4096),  # the same on every run
        # Issue 41's inputs: UTF-32 without its mark, CR-ended lines then LF-ended ones, a small
        # compressed file of many short lines, a zone name no one knows, junk glued before a
        # syslog line, names with a tab and invisible code points, an uptime that goes back, a
        # clock set back.
        "utf-32-le-no-bom": report.decode().encode("utf-32-le"),
        "cr-then-lf": report.replace(b"\n", b"\r", 20),
        "zstd-short-lines": zstandard.ZstdCompressor().compress(b"[    2.000000] x\n" * 2_000 + report),
        "zone-bb": b"[14.11.2026 13:12:12 BB] " + kill + b"\n",
        "nul-glued-syslog": b"\0" * 64 + b"Nov 14 13:12:12 spark-01 kernel: " + kill + b"\n",
        "names": b"[ 1.000000] x\ty invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0\n"
        + b"[ 1.100000] "
        + kill.replace(b"(llama)", "(a\u200bb\ufeffc\u3164)".encode())
        + b"\n",
        "uptime-back": b"[ 5000.000000] "
        + kill
        + b"\n[   10.000000] Linux version 6.8.0\n[  310.000000] "
        + kill
        + b"\n",
        "clock-back": report + b"Nov 14 09:00:00 spark-01 kernel: r8169 0000:01:00.0 enP7s7: Link is Up\n",
    }.items():
        (seeds / name).write_bytes(data)


@NEEDS_ATHERIS
def test_fuzz_reading_saved_logs(tmp_path: Path) -> None:
    # Both paths (line by line, chunk scan) must agree on every input: refusal or lines read.
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    input_seeds(seeds)
    _fuzz("fuzz_inputs.py", seeds, INPUTS_RUNS, 16384)
