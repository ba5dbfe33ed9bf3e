"""A post-incident report in GitHub-flavoured Markdown, ready to paste into an issue."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oomtrace import __version__
from oomtrace.formats import mermaid
from oomtrace.formats.base import Format
from oomtrace.listview import HostsView, ListView
from oomtrace.model import Analysis
from oomtrace.sanitize import inert, inert_line
from oomtrace.storyview import Fact, Grid, MemoryView, ReportView, ServerLogView, StoryView, WhyView
from oomtrace.units import clock_time
from oomtrace.verdict import Verdict

if TYPE_CHECKING:
    from oomtrace.sources.journal import Boot

# GitHub refuses comments longer than this many characters.
GITHUB_LIMIT = 65_536
# Room kept for the notes that say what was cut.
_MARGIN = 600
_PUNCTUATION = re.compile(r"([\\`*_\[\]<>#!|~&])")
# What GitHub turns into a mention, an issue link or math even when escaped: `@name`, `#123`,
# `GH-5`, `owner/repo#7`, `$x$`. Log text holding one is shown as code instead.
_GITHUB_REFERENCE = re.compile(
    r"(?<![\w.])@[A-Za-z0-9-]|(?<![\w&])#\d|\bGH-\d|[\w.-]+/[\w.-]+#\d|\$[^\s$][^$]*\$|\$\$"
)


# What GitHub's autolink extension turns into a mailto: link whatever is escaped in it: a systemd
# unit such as user@1000.service is shaped like an e-mail address. Such a word is a code span.
_EMAIL_SHAPED = re.compile(r"([\w.+-]*[\w+-]@[\w-]+(?:\.[\w-]+)+)")


def text(value: object) -> str:
    """Untrusted text for running Markdown or a table cell: inert, every markup character escaped."""
    flat = inert(str(value)).replace("\n", " ")
    if _GITHUB_REFERENCE.search(flat):
        return code_span(flat)
    # The pattern captures: split gives text and e-mail-shaped words by turns, text first.
    pieces = _EMAIL_SHAPED.split(flat)
    return "".join(code_span(p) if i % 2 else _escaped(p) for i, p in enumerate(pieces))


def _escaped(flat: str) -> str:
    escaped = _PUNCTUATION.sub(r"\\\1", flat)
    # GitHub turns bare URLs and www. names into links; an escape stops it (cmark-gfm checked).
    return escaped.replace("://", "\\://").replace("www.", "www\\.").replace("@", "\\@")


def code_span(value: str) -> str:
    """Text as a code span no backtick run inside it can close (pipes escaped for tables)."""
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{ticks}{pad}{value.replace('|', chr(92) + '|')}{pad}{ticks}"


def code_block(lines: list[str], info: str = "text") -> str:
    """A fenced block that no backtick run inside it can close."""
    body = [inert_line(line) for line in lines]
    longest = max((len(run) for line in body for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence + info, *body, fence])


def table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """A pipe table; cells must already be escaped with text()."""
    marks = align or "".join("l" for _ in header)
    rule = ["---:" if a == "r" else "---" for a in marks]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


class MarkdownFormat(Format):
    def list_episodes(self, analysis: Analysis, view: ListView) -> None:
        names = [name for name, _ in view.columns]
        rows = [
            [
                text(row.cells[name]) if row.has_victim or name != "victim" else f"_{text(row.cells[name])}_"
                for name in names
            ]
            for row in view.rows
        ]
        parts = [f"## {text(view.title)}", ""]
        if rows:
            shown = _rows_fitting(rows, GITHUB_LIMIT - 4 * _MARGIN - len(_footer(view.footer)))
            parts.append(
                table(
                    names,
                    rows[:shown],
                    "".join("r" if align == "right" else "l" for _, align in view.columns),
                )
            )
            if view.note:
                parts += ["", f"_{text(view.note)}._"]
            if shown < len(rows):
                parts += [
                    "",
                    f"_{len(rows) - shown:,} more kill(s) left out to stay under GitHub's "
                    f"{GITHUB_LIMIT:,}-character comment limit; "
                    "`oomtrace list --format json` prints them all._",
                ]
        else:
            parts.append(text(view.empty))
        parts += ["", _footer(view.footer)]
        self._emit("\n".join(parts))

    def hosts(self, view: HostsView) -> None:
        body = _grid(Grid(view.header, view.align, view.rows)) if view.rows else text(view.empty)
        chart = [mermaid.bars(view.chart), ""] if view.chart else []
        if view.chart and view.chart.note:
            chart += [f"_{text(view.chart.note)}._", ""]
        notes = [f"- {text(note)}." for note in view.notes]
        parts = [f"## {text(view.title)}", "", *chart, body, "", *notes, *([""] if notes else [])]
        self._emit("\n".join([*parts, _footer(view.footer)]))

    def boots(self, boots: list[Boot]) -> None:
        rows = [
            [
                str(b.index),
                code_span(b.boot_id),
                text(clock_time(b.first) if b.first else "?"),
                text(clock_time(b.last) if b.last else "?"),
            ]
            for b in boots
        ]
        self._emit(
            "\n".join(
                ["## Boots in the journal", "", table(["index", "boot id", "first", "last"], rows, "rlll")]
            )
        )

    def why(self, analysis: Analysis, view: WhyView) -> None:
        head = f"**Verdict ({text(view.cause)}):** {text(view.verdict)}"
        if view.stories:
            # The server's log is told inside the story of the kill it explains, as on a terminal.
            before = head + "\n\n"
            self._emit(before + document(view.stories, view.footer, view.every, reserved=len(before)))
            return
        log = _server_log(view.server_log) if view.server_log else ""
        before = head + "\n\n" + (log + "\n\n" if log else "")
        if view.involved is None:
            self._emit(before + _footer(view.footer))
            return
        intro = f"{text(view.involved_heading)}:\n\n"
        self._emit(before + intro + document([view.involved], view.footer, view.every))

    def report(self, analysis: Analysis, view: ReportView) -> None:
        # Top-down: what the report covers, how many and when, one row an incident, then each.
        head = [f"# {text(view.title)}", "", text(view.heading) + "."]
        if view.kills_chart is not None:
            head += ["", mermaid.bars(view.kills_chart)]
        if view.overview is not None:
            head += ["", "## Incidents", "", *_overview(view.overview, view.every)]
        for grid in (view.by_victim, view.by_cause):
            if grid is not None:
                head += ["", _grid(grid)]
        if view.by_victim is None:
            head += ["", "No OOM kills in this range."]
        head += ["", *(f"_{text(note)}._" for note in view.notes)]
        top = "\n".join(head).rstrip("\n")
        if not view.stories:
            self._emit(top + "\n\n" + _footer(view.footer))
            return
        self._emit(top + "\n\n" + document(view.stories, view.footer, view.every, reserved=len(top)))

    def not_found(self, analysis: Analysis, query: str, verdict: Verdict) -> None:
        return None

    def _emit(self, document: str) -> None:
        self.console.file.write(document.rstrip("\n") + "\n")


def _overview(grid: Grid, every: str) -> list[str]:
    """The incidents' table, as many rows as a third of GitHub's limit holds (the stories need the
    rest), with a line that says how many more there are and what prints them."""
    rows = [[text(cell) for cell in row] for row in grid.rows]
    shown = _rows_fitting(rows, GITHUB_LIMIT // 3)
    parts = [table(list(grid.header), rows[:shown], grid.align)]
    if shown < len(rows):
        parts += ["", f"_{len(rows) - shown:,} more incident(s); `{text(every)}` lists them all._"]
    return parts


def document(stories: Sequence[StoryView], footer: str, every: str, reserved: int = 0) -> str:
    """The stories that fit under GitHub's limit (`reserved` characters are taken before them),
    with their raw kernel lines cut to share what is left; a line says how many stories were
    left out and which command (`every`) prints them all. Stories past the limit are never
    worded: `why --all` of 20,000 kills words the few that fit."""
    room = GITHUB_LIMIT - reserved - len(_footer(footer)) - 2 * _MARGIN
    shown, bodies = _fitting(stories, room)
    kept = len(bodies)
    left_out = len(stories) - kept
    note = (
        [
            f"_{left_out} more incident(s) left out to stay under GitHub's {GITHUB_LIMIT:,}-character "
            f"comment limit; `{text(every)}` prints them all._",
            "",
        ]
        if left_out
        else []
    )
    fixed = len("\n".join(bodies[:kept])) + _MARGIN * kept
    budget = max(room - fixed, 0) // max(kept, 1)
    sections = [body + "\n\n" + _raw_lines(s, budget) for s, body in zip(shown, bodies, strict=True)]
    return "\n".join(["\n\n---\n\n".join(sections), "", *note, _footer(footer)])


def _rows_fitting(rows: list[list[str]], room: int) -> int:
    used = 0
    for count, row in enumerate(rows):
        used += sum(len(cell) + 3 for cell in row) + 2
        if used > room:
            return count
    return len(rows)


def _fitting(stories: Sequence[StoryView], room: int) -> tuple[list[StoryView], list[str]]:
    """The stories, in order, that fit in `room` characters (at least one), and their bodies."""
    shown: list[StoryView] = []
    bodies: list[str] = []
    used = 0
    for story in stories:
        body = _story(story)
        used += len(body) + _MARGIN
        if used > room and bodies:
            break
        shown.append(story)
        bodies.append(body)
    return shown, bodies


def _server_log(log: ServerLogView) -> str:
    last = code_block([log.last_line])
    return "### The server's own log\n\n" + _facts(log.facts) + "\n\nIts last line:\n\n" + last


def _footer(footer: str) -> str:
    return f"<sub>oomtrace {__version__}. {text(footer)}</sub>"


def _story(story: StoryView) -> str:
    headline = f"**{text(story.who)}**{text(story.what)}."
    parts = [f"## {text(story.heading)}", "", " ".join([headline, *(text(s) for s in story.sentences)]), ""]
    if story.timeline.rows:
        parts += ["### Timeline", ""]
        if story.run_up is not None:
            parts += [mermaid.timeline(story.run_up), ""]
        parts += [_grid(story.timeline), ""]
    if story.samples is not None:
        parts += ["### The watcher's samples before the kill", "", *_blocks(mermaid.samples(story.samples))]
        marks = story.samples.marks()
        marked = " The grey bars mark where these warnings began:" if marks else ""
        parts += [text(story.samples_note) + marked, ""]
        if marks:
            parts += [*(f"- {text(mark)}" for mark in marks), ""]
    # The collateral has its own table here; the facts keep the rest.
    facts = tuple(f for f in story.facts if f.key != "collateral" or story.collateral is None)
    parts += ["### Facts", "", _facts(facts), ""]
    if story.collateral is not None:
        parts += ["### Also killed in this incident", "", _grid(story.collateral), ""]
    if story.server_log is not None:
        parts += [_server_log(story.server_log), ""]
    if story.memory is not None:
        chart = [mermaid.pie(story.memory_chart), ""] if story.memory_chart else []
        parts += ["### Memory at the kill", "", *chart, _memory(story.memory, bool(chart)), ""]
    if story.holders is not None:
        parts += ["### Largest processes at the kill", "", _grid(story.holders), ""]
    return "\n".join(parts).rstrip("\n")


def _facts(facts: tuple[Fact, ...]) -> str:
    return table(["fact", "what the log says"], [[text(f.label), text(f.value)] for f in facts])


def _grid(grid: Grid) -> str:
    return table(list(grid.header), [[text(cell) for cell in row] for row in grid.rows], grid.align)


def _blocks(blocks: list[str]) -> list[str]:
    return [line for block in blocks for line in (block, "")]


def _memory(memory: MemoryView, charted: bool) -> str:
    figures = memory.beside_chart if charted else memory.figures
    rows = [[text(label), text(amount)] for label, amount in figures]
    notes = "\n".join(f"- {text(note)}" for note in memory.notes)
    if not rows:
        return notes
    return table(["memory", "at the kill"], rows, "lr") + ("\n\n" + notes if notes else "")


def _raw_lines(story: StoryView, budget: int) -> str:
    lines = list(story.raw_lines)
    quote = story.warning_quote
    warning = ""
    if quote is not None:
        # A driver developer asks for the warning's own line: it goes first, as in the log.
        where = text(quote.where)
        warning = f"The first warning, {where}:\n\n{code_block(list(quote.lines))}\n\nThis episode:\n\n"
        budget -= len(warning)
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = len(inert_line(line)) + 1
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    first, last = story.lines
    cut = len(lines) - len(kept)
    note = ""
    if cut:
        note = (
            f"\n\n_{cut} of {len(lines)} lines were cut to stay under GitHub's {GITHUB_LIMIT:,}-character "
            f"comment limit; the log has them all at lines {first}\u2013{last}._"
        )
    span = f"lines {first}\u2013{last} of this episode"
    head = f"Kernel log {span}"
    if quote is not None:
        head = f"Kernel log {text(quote.where)} (its first warning) and {span}"
    summary = f"{head} ({len(lines)} lines)"
    if story.unquoted:
        summary = (
            f"{head}: the {len(lines)} it was read from; "
            f"the other {story.unquoted} (registers, free-page lists, hugepage counts, other "
            "messages between) are in the log"
        )
    return (
        "\n".join(
            ["<details>", f"<summary>{summary}</summary>", "", warning + code_block(kept), "", "</details>"]
        )
        + note
    )
