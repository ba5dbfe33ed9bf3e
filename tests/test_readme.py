"""The README's quick start stays what CI runs."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def test_ci_runs_the_readmes_test_command_exactly() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```sh\n(python3 -m venv .*?)\n```", readme)
    assert len(commands) == 2, commands
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert commands[1] in ci


def test_the_quick_start_fixture_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    first = re.findall(r"```sh\n(python3 -m venv .*?)\n```", readme)[0]
    fixture = re.search(r"-k (\S+)", first)
    assert fixture and (ROOT / fixture.group(1)).is_file()
