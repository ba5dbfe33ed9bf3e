"""Golden files: every fixtures/<case>/ is run through `why`, `list` and `report`, in every
format, and compared."""

from __future__ import annotations

import os
import shutil
import tomllib
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run

CASES = sorted(p.parent for p in FIXTURES.glob("*/case.toml"))
UPDATE = os.environ.get("OOMTRACE_UPDATE_GOLDEN") == "1"


def _relative(path: Path, root: Path = FIXTURES.parent) -> str:
    return os.path.relpath(path.resolve(), root.resolve())


def _normalise(text: str) -> str:
    # rich pads grid cells to the full width; trailing spaces carry no meaning.
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _compare(case: Path, name: str, actual: str) -> None:
    expected_file = case / name
    actual = _normalise(actual)
    if UPDATE or not expected_file.exists():
        expected_file.write_text(actual)
        if not UPDATE:
            pytest.fail(f"{expected_file} did not exist; wrote it: review and commit it")
    assert actual == expected_file.read_text(), (
        f"{expected_file} differs (OOMTRACE_UPDATE_GOLDEN=1 rewrites it)"
    )


@pytest.fixture(scope="module")
def fixtures_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository root holding a copy of fixtures/, mtimes kept (a syslog stamp's year comes
    from its file's), without the golden outputs."""
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(FIXTURES, root / FIXTURES.name, ignore=shutil.ignore_patterns(*GOLDEN))
    return root


RUNS = [
    ("why", "json", "why.json"),
    ("why", "text", "why.txt"),
    ("why", "markdown", "why.md"),
    ("list", "text", "list.txt"),
    ("list", "json", "list.json"),
    ("list", "markdown", "list.md"),
    ("report", "text", "report.txt"),
    ("report", "json", "report.json"),
    ("report", "markdown", "report.md"),
]
GOLDEN = [name for _, _, name in RUNS]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
@pytest.mark.parametrize(("command", "output_format", "name"), RUNS)
def test_golden(
    case: Path,
    command: str,
    output_format: str,
    name: str,
    monkeypatch: pytest.MonkeyPatch,
    fixtures_copy: Path,
) -> None:
    config = tomllib.loads((case / "case.toml").read_text())
    # Paths in the output are relative to the repository, as a user would type them. The case is
    # read from a copy at the same relative path, so setting a server log's mtime below leaves
    # the shipped fixture alone.
    copy = fixtures_copy
    monkeypatch.chdir(copy)
    source = case
    case = copy / _relative(case)
    logs = [_relative(case / name, copy) for name in config.get("kernel_logs", ["kernel.log"])]
    args = [arg for log in logs for arg in ("-k", log)] + config["args"]
    query = []
    if command == "why":
        query = [config["query"]]
        for server_name in config.get("server_logs", []):
            server_log = case / server_name
            if "server_log_mtime" in config:
                # Logs without stamps end at their file's modification time, which git does not keep.
                when = datetime.fromisoformat(config["server_log_mtime"]).timestamp()
                os.utime(server_log, (when, when))
            args += ["--server-log", _relative(server_log, copy)]
    result = run(command, *query, *args, "--format", output_format)
    expected_code = config.get("exit_code", 0) if command == "why" else 0
    assert result.exit_code == expected_code, result.output
    _compare(source, name, result.stdout)
