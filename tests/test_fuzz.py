"""A bounded run of the atheris fuzzer over the line pipeline (see fuzz/fuzz_lines.py)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES, ROOT

SECONDS = int(os.environ.get("OOMTRACE_FUZZ_SECONDS", "20"))


@pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None, reason="atheris is not installed (x86_64 wheels only)"
)
def test_fuzz_the_line_pipeline(tmp_path) -> None:  # type: ignore[no-untyped-def]
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for log in FIXTURES.glob("*/kernel.log"):
        (seeds / log.parent.name).write_bytes(log.read_bytes())
    for paste in (ROOT / "tests" / "realworld" / "cases").glob("*/input.txt"):
        (seeds / paste.parent.name).write_bytes(paste.read_bytes())
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "fuzz" / "fuzz_lines.py"),
            f"-max_total_time={SECONDS}",
            "-rss_limit_mb=2048",
            "-max_len=8192",
            str(seeds),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=SECONDS + 120,
    )
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None, reason="atheris is not installed (x86_64 wheels only)"
)
def test_fuzz_the_option_values(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Seeded with issue 26's inputs (fuzz/seeds/options/): each an answer or a one-line error."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for seed in (ROOT / "fuzz" / "seeds" / "options").iterdir():
        (seeds / seed.name).write_bytes(seed.read_bytes())  # libFuzzer adds its finds to the folder
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "fuzz" / "fuzz_options.py"),
            f"-max_total_time={max(SECONDS // 2, 5)}",
            "-rss_limit_mb=2048",
            "-max_len=512",
            str(seeds),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=SECONDS + 120,
    )
    assert done.returncode == 0, done.stderr[-4000:]
