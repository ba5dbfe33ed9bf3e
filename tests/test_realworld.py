"""The real-paste corpus (tests/realworld/): every case read, none refused, the facts scored."""

from __future__ import annotations

import functools
import json

import pytest

from tests.realworld.score import BASELINE, CASES, REFUSED, CaseScore, score_all, score_case

# The total share of facts right on tests/realworld/cases (docs/sources.md, "Real pastes"). A case
# added lowers it honestly; what a change must not do is lose a fact another case read right
# (the baseline test below).
MIN_SHARE = 0.90


@functools.cache
def _scores() -> tuple[CaseScore, ...]:
    return tuple(score_all())


def test_no_case_is_refused_but_the_named_limits_and_the_total_holds() -> None:
    scores = _scores()
    assert len(scores) >= 160
    refused = {s.name for s in scores if s.refused}
    assert refused == set(REFUSED)
    right = sum(s.right for s in scores)
    total = sum(s.total for s in scores)
    assert right / total >= MIN_SHARE, f"{right}/{total}"


def test_no_fact_read_right_before_is_lost() -> None:
    """Every case against its own baseline, fact by fact: a fix for one shape must not change
    another's answer. After a change that reads more, `score.py --write-baseline` raises it."""
    baseline = json.loads(BASELINE.read_text())
    scores = _scores()
    assert {s.name for s in scores} == set(baseline), "a case without a baseline: --write-baseline"
    lost = {s.name: sorted(set(baseline[s.name]) - set(s.facts_right)) for s in scores}
    assert {name: facts for name, facts in lost.items() if facts} == {}


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir()), ids=str)
def test_every_case_names_its_source_and_its_facts(case: str) -> None:
    expected = json.loads((CASES / case / "expected.json").read_text())
    assert expected["source"].startswith("http")
    assert isinstance(expected["episodes"], list)
    assert (CASES / case / "input.txt").stat().st_size > 0
    assert (score_case(CASES / case).refused is None) == (case not in REFUSED)


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir()), ids=str)
def test_every_command_and_format_tells_every_case(case: str) -> None:
    """list, why --all and report in each format: a story or "nothing found", never an error."""
    from tests.conftest import run

    log = str(CASES / case / "input.txt")
    if case in REFUSED:  # a named limit: refused in one line, with the documented exit code
        refused = run("list", "-k", log)
        assert refused.exit_code == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.output
        assert "Traceback" not in refused.output and "internal error" not in refused.output
        return
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
