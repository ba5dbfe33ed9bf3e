"""One view, many renderers: every phrase `why` and `report` print is worded once, in storyview,
and the terminal and Markdown each show that same phrase (never a rewording of their own)."""

from __future__ import annotations

import re
import tomllib
from datetime import datetime, timezone
from pathlib import Path

import pytest

from oomtrace.analyze import analyze
from oomtrace.formats.markdown import text as markdown_text
from oomtrace.sources.textfile import KernelLogFile
from oomtrace.story import report
from oomtrace.storyview import ReportView, StoryView, report_view
from tests.conftest import FIXTURES, run

CASES = sorted(p.parent for p in FIXTURES.glob("*/case.toml"))


def _view(case: Path) -> tuple[ReportView, list[str]]:
    config = tomllib.loads((case / "case.toml").read_text())
    args = config["args"]
    options = dict(zip(args[::2], args[1::2], strict=True))
    logs = [str(case / name) for name in config.get("kernel_logs", ["kernel.log"])]
    boot = options.get("--boot-time")
    sources = [
        KernelLogFile(
            log,
            timezone.utc,
            int(options["--year"]) if "--year" in options else None,
            datetime.fromisoformat(boot) if boot else None,
        )
        for log in logs
    ]
    analysis = analyze(sources)
    view = report_view(analysis, report(analysis, None, None, 0))
    cli_args = [arg for log in logs for arg in ("-k", log)] + args
    return view, cli_args


def _squeezed(value: str) -> str:
    # The terminal wraps and folds long values anywhere, inside a panel's borders; without
    # whitespace and box-drawing characters they compare whole.
    return re.sub(r"[\s\u2500-\u257f]+", "", value)


def _phrases(story: StoryView) -> list[str]:
    """What both formats show; the Markdown summary's sentences restate the facts in prose."""
    said = [story.who, story.what.strip()]
    said += [fact.value for fact in story.facts]
    if story.memory is not None:
        said += [*(amount for _, amount in story.memory.figures), *story.memory.notes]
    said += [row[3] for row in story.timeline.rows]
    return said


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_text_and_markdown_say_the_views_phrases(case: Path) -> None:
    view, args = _view(case)
    if not view.stories:
        pytest.skip(f"{case.name} has no incident to tell")
    terminal = run("report", *args, "--format", "text").stdout
    # Markdown is a document to paste: it is read whole, at any width.
    markdown = run("report", *args, "--format", "markdown").stdout
    squeezed = _squeezed(terminal)
    for story in view.stories:
        for sentence in story.sentences:
            assert markdown_text(sentence) in markdown, sentence
        brief = {fact.value: fact.brief for fact in story.facts if fact.brief}
        # Markdown gives the collateral its own table instead of the fact's list.
        tabled = {f.value for f in story.facts if f.key == "collateral" and story.collateral}
        for phrase in _phrases(story):
            if phrase not in tabled:
                assert markdown_text(phrase) in markdown, phrase
            assert _squeezed(brief.get(phrase, phrase)) in squeezed, phrase
        for row in story.collateral.rows if story.collateral else ():
            assert "| " + " | ".join(markdown_text(cell) for cell in row) + " |" in markdown
    assert markdown_text(view.footer) in markdown
    assert _squeezed(view.footer) in squeezed


def test_markdown_summary_says_no_word_of_its_own() -> None:
    """Each sentence of a Markdown story is the view's: the paragraph is the headline and them."""
    view, args = _view(FIXTURES / "seed000_llama_server_gb10")
    markdown = run("report", *args, "--format", "markdown").stdout
    (story,) = view.stories
    headline = f"**{markdown_text(story.who)}**{markdown_text(story.what)}."
    paragraph = " ".join([headline, *(markdown_text(s) for s in story.sentences)])
    assert paragraph in markdown.splitlines()
