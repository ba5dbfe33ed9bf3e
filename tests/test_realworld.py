"""The real-paste corpus (tests/realworld/): every case read, none refused, the facts scored."""

from __future__ import annotations

import json

import pytest

from tests.realworld.score import CASES, score_all, score_case

# The total share of facts right on tests/realworld/cases (docs/sources.md, "Real pastes"). A change that
# lowers it fails here; one that raises it should raise this too.
MIN_SHARE = 0.94


def test_no_case_is_refused_and_the_total_holds() -> None:
    scores = score_all()
    assert len(scores) >= 60
    refused = [(s.name, s.refused) for s in scores if s.refused]
    assert refused == []
    right = sum(s.right for s in scores)
    total = sum(s.total for s in scores)
    assert right / total >= MIN_SHARE, f"{right}/{total}"


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir()), ids=str)
def test_every_case_names_its_source_and_its_facts(case: str) -> None:
    expected = json.loads((CASES / case / "expected.json").read_text())
    assert expected["source"].startswith("http")
    assert isinstance(expected["episodes"], list)
    assert (CASES / case / "input.txt").stat().st_size > 0
    assert score_case(CASES / case).refused is None


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir()), ids=str)
def test_every_command_and_format_tells_every_case(case: str) -> None:
    """list, why --all and report in each format: a story or "nothing found", never an error."""
    from tests.conftest import run

    log = str(CASES / case / "input.txt")
    listed = run("list", "-k", log, "--format", "json", "--tz", "UTC")
    assert listed.exit_code == 0, listed.output
    episodes = json.loads(listed.stdout)["episodes"]
    names = {e["victim"]["comm"] for e in episodes if e.get("victim") and e["victim"].get("comm")}
    for fmt in ("text", "markdown", "json"):
        assert run("list", "-k", log, "--format", fmt).exit_code == 0
        assert run("report", "-k", log, "--format", fmt).exit_code == 0
        for name in sorted(names)[:3]:
            result = run("why", name, "--all", "-k", log, "--format", fmt)
            assert result.exit_code == 0, (name, fmt, result.output[-500:])
