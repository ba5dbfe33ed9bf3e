"""Golden files: every fixtures/<case>/ is run through `why` and `list` and compared."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run

CASES = sorted(p.parent for p in FIXTURES.glob("*/case.toml"))
UPDATE = os.environ.get("OOMTRACE_UPDATE_GOLDEN") == "1"


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


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
@pytest.mark.parametrize(
    ("command", "output_format", "name"),
    [
        ("why", "json", "why.json"),
        ("why", "text", "why.txt"),
        ("why", "markdown", "why.md"),
        ("list", "text", "list.txt"),
    ],
)
def test_golden(
    case: Path, command: str, output_format: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tomllib.loads((case / "case.toml").read_text())
    # Paths in the output are relative to the repository, as a user would type them.
    monkeypatch.chdir(FIXTURES.parent)
    log = str((case / "kernel.log").relative_to(FIXTURES.parent))
    query = [config["query"]] if command == "why" else []
    result = run(command, *query, "-k", log, *config["args"], "--format", output_format)
    assert result.exit_code == 0, result.output
    _compare(case, name, result.stdout)
