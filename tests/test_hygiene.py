"""The suite leaves the machine as it found it (issue 23, 5): what it writes into the kernel log is
tagged, and it passes from a checkout at any path and at any terminal width."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, TEST_TAG, run, tagged_name
from tests.kmsg_audit import untagged
from tests.test_watch_live import HUNG_TASK, NVRM

REAL_KILL = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_text().splitlines()


def test_the_lines_the_suite_writes_are_tagged_and_still_parsed() -> None:
    # What test_watch_live writes into /dev/kmsg: oomtrace reads both as the warnings they
    # mimic (the watcher must), and the audit finds nothing untagged in them.
    assert TEST_TAG in NVRM and TEST_TAG in HUNG_TASK
    assert untagged([f"[  100.000000] {NVRM}", f"[  101.000000] {HUNG_TASK}"]) == []
    # The same lines without the tag are what the suite used to write; the audit names them.
    bare = ["[  100.000000] NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY]"]
    assert [item.split(":")[0] for item in untagged(bare)] == ["a nvrm-no-memory warning"]


def test_a_story_that_names_the_suites_nvrm_line_says_whose_it_is(tmp_path: Path) -> None:
    # oomtrace reads tagged lines as any other (the watch tests need them read): where one is a
    # kill's first warning, the story's words say it is the test suite's.
    seed = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_text()
    log = tmp_path / "kern.log"
    log.write_text(re.sub(r"NVRM: nvCheckOkFailedNoLog.*", lambda _: NVRM, seed))
    text = run("why", "llama-server", "-k", str(log), "--tz", "UTC")
    assert "NV_ERR_NO_MEMORY in oomtrace_test_suite" in " ".join(text.stdout.split())
    story = json.loads(run("why", "llama-server", "-k", str(log), "--tz", "UTC", "-f", "json").stdout)
    assert story["earliest_warning"]["kind"] == "nvrm-no-memory"
    assert TEST_TAG in story["earliest_warning"]["text"]


def test_the_audit_tells_a_tagged_kill_from_an_untagged_one() -> None:
    name = tagged_name()
    assert len(name) == 15 and name.startswith(TEST_TAG)  # the kernel keeps 15 characters of a comm
    tagged = [line.replace("oomprobe-hog", name) for line in REAL_KILL]
    assert untagged(tagged) == []
    (found,) = untagged(REAL_KILL)
    assert found.startswith("a kill of oomprobe-hog: ") and "Killed process 2110" in found


def _deep_copy_of_the_checkout(tmp_path: Path) -> Path:
    """The repository's files (as git lists them, or all but the venv) at a 300-character path."""
    deep = tmp_path
    while len(str(deep)) < 300:
        deep = deep / "a-very-long-folder-name-for-a-checkout"
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot tell its files from the build's")
    for name in listed.stdout.splitlines():
        source = ROOT / name
        if source.is_file():
            (deep / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, deep / name)
    return deep


def test_path_and_width_sensitive_tests_pass_from_a_deep_checkout_at_57_columns(tmp_path: Path) -> None:
    deep = _deep_copy_of_the_checkout(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(deep / "src"), "COLUMNS": "57"}
    env.pop("PYTEST_ADDOPTS", None)
    imported = subprocess.run(
        [sys.executable, "-c", "import oomtrace; print(oomtrace.__file__)"],
        cwd=deep,
        env=env,
        capture_output=True,
        text=True,
    )
    assert imported.stdout.startswith(str(deep)), imported  # the copy's code, not this checkout's
    chosen = [
        "tests/test_hostile.py::test_a_failed_write_leaves_no_partial_file",  # wrapped at "OOM episode"
        "tests/test_golden.py",  # paths relative to the checkout
        "tests/test_cli.py",  # the width clamp, subprocesses of the entry point
        "tests/test_check.py",
        "tests/test_docs_commands.py",  # the README's example names its log as given, from the checkout
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *chosen],
        cwd=deep,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1] and "failed" not in done.stdout.splitlines()[-1]
