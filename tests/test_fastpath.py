"""The grep-first fast path for big files gives the same answers as reading every line."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS, FIXTURES, ROOT, run

pytestmark = pytest.mark.skipif(shutil.which("grep") is None, reason="the fast path needs grep")
LOGS = sorted(FIXTURES.glob("*/kernel.log")) + (sorted(CORPUS.glob("**/*.txt")) if CORPUS.is_dir() else [])


def listing(log: Path, fast: bool, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "0" if fast else str(1 << 60))
    result = run("list", "-k", str(log), "--format", "json", "--tz", "UTC", "--year", "2026")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fast_path_equals_full_read(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, full = listing(log, True, monkeypatch), listing(log, False, monkeypatch)
    assert fast["episodes"] == full["episodes"]
    assert fast["warnings"] == full["warnings"]
    assert fast["incidents"] == full["incidents"]
    assert fast["source"]["records"] == full["source"]["records"]


def test_fast_path_on_a_generated_log_with_noise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from make_log import write

    log = tmp_path / "kern.log"
    write(log, mib=4, reports=3)
    fast, full = listing(log, True, monkeypatch), listing(log, False, monkeypatch)
    assert len(fast["episodes"]) == 3
    assert fast["episodes"] == full["episodes"] and fast["warnings"] == full["warnings"]
    assert fast["source"] == full["source"]
