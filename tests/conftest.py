"""Shared helpers: paths to fixtures and the peer corpus, and an in-process CLI runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from oomtrace.cli import cli

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
CORPUS = ROOT.parent / "shared" / "corpus"
# The episode fields the oomtrace/1 contract promises never to rename (README, "JSON contract").
EPISODE_KEYS = frozenset(
    {
        "killer",
        "time",
        "uptime_s",
        "raw_time",
        "trigger",
        "constraint",
        "memcg",
        "task_memcg",
        "victim",
        "tasks",
        "kernel",
        "reaped",
        "missing",
        "lines",
    }
)


def run(*args: str, input: str | bytes | None = None) -> Result:
    """Invoke the CLI in-process at a fixed width with colour off, as golden files expect."""
    runner = CliRunner()
    return runner.invoke(cli, list(args), input=input, env={"COLUMNS": "80", "NO_COLOR": "1"})


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the peer corpus is not at {CORPUS} (it lives in ../shared beside the repo)")
    return CORPUS
