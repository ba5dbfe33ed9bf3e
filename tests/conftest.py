"""Shared helpers: paths to fixtures and the peer corpus, and an in-process CLI runner."""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from oomtrace.cli import cli
from tests.kmsg_audit import TEST_TAG

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
# The peers' real reports (OOMAnalyser, cAdvisor, gpud), copied from ../shared/corpus with their
# licences (tests/peers/README.md), so that a fresh clone runs every test.
CORPUS = ROOT / "tests" / "peers"
# The episode fields the oomtrace/1 contract promises never to rename (docs/json.md).
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


# Writing to the kernel log (or OOM-killing in a small cgroup, which logs a real kill report) only
# where that is wanted: on CI, or when asked for.
KERNEL_LOG_OPT_IN = "OOMTRACE_TEST_KMSG"


def kernel_log_skip_reason() -> str | None:
    """Why the tests that add records to this machine's kernel log do not run here, or None."""
    if not sys.platform.startswith("linux"):
        return "needs Linux"
    if os.environ.get("CI") != "true" and os.environ.get(KERNEL_LOG_OPT_IN) != "1":
        return (
            f"writes {TEST_TAG}-tagged records into this machine's kernel log: runs on CI (CI=true) "
            f"or with {KERNEL_LOG_OPT_IN}=1"
        )
    if os.geteuid() != 0:
        return "needs root to write /dev/kmsg and create a memory cgroup"
    if not os.path.exists("/dev/kmsg"):
        return "no /dev/kmsg"
    return None


def tagged_name() -> str:
    """A name for a process the suite OOM-kills: the tag and two hex digits, 15 characters, all
    of which the kernel keeps in its report."""
    return f"{TEST_TAG}{secrets.token_hex(1)}"


def write_kmsg(text: str, priority: int = 4) -> None:
    """One line into the real kernel log, refused unless it carries the test tag."""
    assert TEST_TAG in text, f"a kernel log line the suite writes must carry {TEST_TAG!r}: {text!r}"
    assert kernel_log_skip_reason() is None
    with open("/dev/kmsg", "w") as kmsg:
        kmsg.write(f"<{priority}>{text}\n")


def run(*args: str, input: str | bytes | None = None) -> Result:
    """Invoke the CLI in-process at a fixed width with colour off, as golden files expect."""
    runner = CliRunner()
    return runner.invoke(cli, list(args), input=input, env={"COLUMNS": "80", "NO_COLOR": "1"})


def _fixture_stats() -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(FIXTURES)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in FIXTURES.rglob("*")
        if p.is_file()
    }


@pytest.fixture(scope="session", autouse=True)
def _fixtures_left_as_shipped() -> Iterator[None]:
    """No test changes a shipped fixture, its size or its mtime (`why --server-log` on a log
    without stamps answers by its mtime): tests work on copies in tmp_path."""
    before = _fixture_stats()
    yield
    if os.environ.get("OOMTRACE_UPDATE_GOLDEN") == "1":
        return  # rewriting the goldens was asked for
    after = _fixture_stats()
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    assert not changed, f"the tests changed these fixtures or their mtimes: {changed}"


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the peer corpus is not at {CORPUS}")
    return CORPUS
