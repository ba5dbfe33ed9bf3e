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


def test_the_readme_is_short_and_the_rest_is_in_docs() -> None:
    """A newcomer finishes the README (issue 24): under 10 KB, linking every page of docs/."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) < 10 * 1024
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert pages and all(f"(docs/{name})" in readme for name in pages), pages


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_pages_leads_somewhere() -> None:
    pages = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.is_file(), (page.name, target)
            if anchor:
                headings = re.findall(r"^#+ (.+)$", linked.read_text(), re.M)
                assert anchor in {_anchor(h) for h in headings}, (page.name, target)
