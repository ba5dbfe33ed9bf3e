"""Bounded runs of the atheris fuzzers: fuzz/fuzz_lines.py, fuzz/fuzz_options.py and
fuzz/fuzz_inputs.py (reading saved logs)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

SECONDS = int(os.environ.get("OOMTRACE_FUZZ_SECONDS", "20"))


NEEDS_ATHERIS = pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None, reason="atheris is not installed (x86_64 wheels only)"
)


def _fuzz(target: str, seeds: Path, seconds: int, max_len: int) -> None:
    """A bounded atheris run of fuzz/<target> from the seeds folder (libFuzzer adds its finds)."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "fuzz" / target),
            f"-max_total_time={seconds}",
            # A fixed seed: CI replays the same mutations (what they find is fixed and seeded in
            # fuzz/seeds/); fuzz longer by hand with another seed to look for new finds.
            "-seed=20261202",
            "-rss_limit_mb=2048",
            f"-max_len={max_len}",
            str(seeds),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=seeds.parent,
        timeout=seconds + 120,
    )
    assert done.returncode == 0, done.stderr[-4000:]


@NEEDS_ATHERIS
def test_fuzz_the_line_pipeline(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for log in FIXTURES.glob("*/kernel.log"):
        (seeds / log.parent.name).write_bytes(log.read_bytes())
    for paste in (ROOT / "tests" / "realworld" / "cases").glob("*/input.txt"):
        (seeds / paste.parent.name).write_bytes(paste.read_bytes())
    _fuzz("fuzz_lines.py", seeds, SECONDS, 8192)


@NEEDS_ATHERIS
def test_fuzz_the_option_values(tmp_path: Path) -> None:
    """Seeded with issue 26's inputs (fuzz/seeds/options/): each an answer or a one-line error."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for seed in (ROOT / "fuzz" / "seeds" / "options").iterdir():
        (seeds / seed.name).write_bytes(seed.read_bytes())
    _fuzz("fuzz_options.py", seeds, max(SECONDS // 2, 5), 512)



def input_seeds(seeds: Path) -> None:
    """The inputs issues 23 and 26 found mishandled, each made from seed 000's report."""
    import zstandard

    report = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_bytes()
    packed = gzip.compress(report)
    flipped = bytearray(packed)
    flipped[len(flipped) // 2] ^= 0x01
    zstd = zstandard.ZstdCompressor(write_checksum=True).compress(report)
    record = {"timeUnixNano": "1794661083118000000", "body": {"stringValue": "Out of memory: Killed process 1"}}
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
        "random": os.urandom(4096),
    }.items():
        (seeds / name).write_bytes(data)


@NEEDS_ATHERIS
def test_fuzz_reading_saved_logs(tmp_path: Path) -> None:
    # Both paths (line by line, chunk scan) must agree on every input: refusal or lines read.
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    input_seeds(seeds)
    _fuzz("fuzz_inputs.py", seeds, SECONDS, 16384)
