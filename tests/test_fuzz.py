"""Bounded runs of the atheris fuzzers: fuzz/fuzz_lines.py and fuzz/fuzz_options.py."""

from __future__ import annotations

import importlib.util
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
