"""The terminal report (rich): readable at 80 columns, plain when piped."""

from __future__ import annotations

import itertools
import re
from functools import lru_cache, partial
from typing import TYPE_CHECKING

from rich import box
from rich.cells import cell_len, get_character_cell_size
from rich.console import Console, OverflowMethod
from rich.panel import Panel
from rich.segment import Segment, Segments
from rich.style import Style
from rich.table import Table
from rich.text import Text

from oomtrace.charts import Bars, ShareChart
from oomtrace.formats.base import Format
from oomtrace.formats.textcharts import bar_rows, sparklines, stacked_bar
from oomtrace.frozen import Frozen
from oomtrace.model import Analysis
from oomtrace.sanitize import inert
from oomtrace.storyview import Fact, Grid, MemoryView, ReportView, ServerLogView, StoryView, WhyView
from oomtrace.units import clock_time
from oomtrace.verdict import Verdict

if TYPE_CHECKING:
    from oomtrace.listview import HostsView, ListView
    from oomtrace.sources.journal import Boot


def _t(text: object, style: str = "") -> Text:
    """Untrusted text, made inert, never parsed as markup."""
    return Text(inert(str(text)), style=style)


_TIMELINE_STYLES = {"kill": "bold red", "collateral": "red", "warning": "yellow", "server-warning": "yellow"}
_TONES = {"": "", "absent": "dim", "caveat": "yellow"}


class TextFormat(Format):
    def list_episodes(self, analysis: Analysis, view: ListView) -> None:
        columns = list(view.columns)
        names = [name for name, _ in columns]
        rows = [[row.cells[name] for name in names] for row in view.rows]
        # Nothing a reader scans for is cut: numbers, times and the victim's name keep their width
        # (a comm is 15 characters, a unit or a cgroup more). Where the row is too wide, the gaps
        # narrow, then the trigger goes (`why` names it), then each kill takes a few lines.
        # Cells, not characters: a name in CJK takes two columns a character.
        widths = [max([len(name), *(cell_len(inert(r[i])) for r in rows)]) for i, name in enumerate(names)]
        hosted = names.index("host") if "host" in names else None
        if hosted is not None:
            # The host is cut (`why` and JSON keep it whole), and the trigger gives way to it.
            widths[hosted] = min(widths[hosted], _HOST_W)
            columns, rows, names, widths = columns[:-1], [r[:-1] for r in rows], names[:-1], widths[:-1]
        layout = _list_layout(names, widths, self.console.width)
        if layout is None:
            self._list_lines(analysis, view, rows, names)
            return
        shown, gap = layout
        columns, rows, names = columns[:shown], [r[:shown] for r in rows], names[:shown]
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, gap, 0, 0))
        for (name, justify), width in zip(columns, widths, strict=False):
            # A cut host ends in "…"; no name is folded over two lines.
            table.add_column(
                name,
                justify=justify,  # type: ignore[arg-type]
                overflow="ellipsis",
                no_wrap=True,
                width=width,
            )
        victim_at = names.index("victim")
        for cells, row in zip(rows, view.rows, strict=True):
            styled = [_t(cell) for cell in cells]
            styled[victim_at] = _t(cells[victim_at], "bold" if row.has_victim else "dim")
            table.add_row(*styled)
        self.console.print(table if view.rows else _t(view.empty))
        if view.note:
            self.console.print(_t(view.note + "."), style="dim")
        self.console.print(_t(view.footer), style="dim")

    def _list_lines(
        self, analysis: Analysis, view: ListView, rows: list[list[str]], names: list[str]
    ) -> None:
        """The list for a terminal too narrow for its table: each row a few wrapped lines."""
        for row in rows:
            # A field a line, so that no wrap can part a label from its number.
            self.console.print(_t(f"#{row[0]}  {row[1]}"), no_wrap=True, overflow="fold")
            for name, cell in zip(names[2:], row[2:], strict=True):
                if cell:
                    self.console.print(_t(f"    {name} {cell}"), overflow="fold")
        if view.note:
            self.console.print(_t(view.note + "."), style="dim")
        self.console.print(_t(view.footer), style="dim")

    def hosts(self, view: HostsView) -> None:
        if view.chart is not None:
            self._bars(view.chart)
        widths = [max(len(c) for c in column) for column in zip(view.header, *view.rows, strict=True)]
        if view.rows and sum(widths) + 2 * (len(widths) - 1) > self.console.width:
            # Too narrow for the table: a host a few lines, each field on its own (never cut).
            self.console.print()
            self.console.print(_t(view.title), style="bold")
            for row in view.rows:
                self.console.print(_t(row[0]), style="bold", overflow="fold")
                for name, cell in zip(view.header[1:], row[1:], strict=True):
                    if cell:
                        self.console.print(_t(f"    {name} {cell}"), overflow="fold")
        elif view.rows:
            self._section(view.title, Grid(view.header, view.align, view.rows))
        else:
            self.console.print(_t(view.empty))
        for note in view.notes:
            self.console.print(_t(note + "."))
        self.console.print(_t(view.footer), style="dim")

    def boots(self, boots: list[Boot]) -> None:
        for boot in boots:
            first = clock_time(boot.first) if boot.first else "?"
            last = clock_time(boot.last) if boot.last else "?"
            self.console.print(_t(f"{boot.index:>4}  {boot.boot_id}  {first} \u2014 {last}"), no_wrap=True)

    def why(self, analysis: Analysis, view: WhyView) -> None:
        if view.stories:
            if view.which_kill:  # the stories do not say which of the target's kills they are
                self.console.print(_t(view.which_kill + "."))
            for index, story in enumerate(view.stories):
                if index:
                    self.console.print()
                self._story(story)
        else:
            self.console.print(
                Panel(_t(view.verdict), title=_t(f"oomtrace why {view.query}"), title_align="left")
            )
            if view.server_log is not None:
                self._server_log(view.server_log)
            if view.involved is not None:
                self.console.print()
                self.console.print(Text(view.involved_heading, style="bold"))
                self._story(view.involved)
        self.console.print(_t(view.footer), style="dim")

    def _server_log(self, log: ServerLogView) -> None:
        last_line = [Text("Its last line", style="bold"), _t(log.last_line)]
        self._print([*_fact_rows(log.facts), last_line], _FACTS, "The server's own log")

    def report(self, analysis: Analysis, view: ReportView) -> None:
        self.console.print(Panel(_t(view.heading), title="oomtrace report", title_align="left"))
        counts = _grid()
        for label, grid in (("By victim", view.by_victim), ("By cause", view.by_cause)):
            counts.add_row(
                label, _t(", ".join(f"{row[0]} ×{row[1]}" for row in grid.rows) if grid else "none")
            )
        for note in view.notes:
            counts.add_row("Left out", _t(note))
        self.console.print(counts)
        if view.kills_chart is not None:
            self._bars(view.kills_chart)
        if view.overview is not None:
            self._overview(view.overview)
        for story in view.stories:
            self.console.print()
            self._story(story)
        self.console.print(_t(view.footer), style="dim")

    def not_found(self, analysis: Analysis, query: str, verdict: Verdict) -> None:
        # The one-line error on stderr says it all; stdout stays empty for scripts.
        return None

    def _story(self, story: StoryView) -> None:
        # One write a story: rich writes its buffer out after each print otherwise.
        with self.console:
            headline = Text()
            headline.append(_t(story.who, "bold"))
            headline.append(_t(story.what + (f"; {story.ending}" if story.ending else "")))
            self.console.print(Panel(headline, title=_t(story.title), title_align="left"))
            self._print(_fact_rows(story.facts), _FACTS)
            if story.server_log is not None:
                self._server_log(story.server_log)
            if story.memory is not None:
                self._memory(story.memory, story.memory_chart)
            if story.holders is not None:
                self._section("Largest processes at the kill", story.holders)
            if story.timeline.rows:
                rows = [
                    [_t(offset), _t(when), _t(event, _TIMELINE_STYLES.get(kind, ""))]
                    for offset, when, kind, event in story.timeline.rows
                ]
                self._print(rows, _TIMELINE, "Timeline")
            if story.samples is not None:
                lines = [[Text(" "), line] for line in sparklines(story.samples)]
                lines.append([Text(" "), _t(story.samples_note, "dim")])
                self._print(lines, _MEMORY, "The watcher's samples before the kill")

    def _memory(self, memory: MemoryView, chart: ShareChart | None) -> None:
        pictured = stacked_bar(chart, self.console.width - 3) if chart else []
        rows = [[Text(" "), line] for line in pictured]
        figures = memory.beside_chart if chart else memory.figures
        if figures:
            rows += [[Text(" "), _t(" · ".join(f"{label} {amount}" for label, amount in figures))]]
        rows += [[Text(" •"), _t(note)] for note in memory.notes]
        self._print(rows, _MEMORY, "Memory at the kill")

    def _overview(self, grid: Grid) -> None:
        """The incidents' table as two lines a row: a table of five columns does not fit 80."""
        rows: list[list[Text]] = []
        for incident, *cells, first in grid.rows:
            rows.append([_t(f"#{incident}"), _t("  ".join(cells))])
            rows.append([Text(), _t(f"{grid.header[-1]}: {first}", "dim")])
        self._print(rows, _FACTS, "Incidents")

    def _bars(self, chart: Bars) -> None:
        self.console.print()
        self.console.print(Text(chart.title, style="bold"))
        for row in bar_rows(chart, self.console.width):
            self.console.print(row, no_wrap=True, overflow="ellipsis")

    def _section(self, title: str, grid: Grid) -> None:
        """A small table under a bold title, numbers right-aligned as the view says."""
        rows = [[Text(name, style="bold") for name in grid.header]]
        rows += [[_t(cell) for cell in row] for row in grid.rows]
        right = frozenset(i for i, align in enumerate(grid.align) if align == "r")
        self._print(rows, _Layout(gap=2, right=right, wrap_last=False), title)

    def _print(self, rows: list[list[Text]], layout: _Layout, title: str = "") -> None:
        """Rows laid out as rich's tables lay them out, or by rich when they do not fit; with a
        title, after a blank line and the title in bold (one print: each costs a render pass)."""
        block = _laid_out(rows, layout, self.console)
        if block is None:
            if title:
                self.console.print()
                self.console.print(Text(title, style="bold"))
            self.console.print(_table(rows, layout))
            return
        segments = block.segments
        if title:
            bold = self.console.get_style("bold")
            segments = [Segment("\n"), Segment(title, bold), Segment("\n"), *segments]
        if any("\t" in segment.text for segment in segments):
            # rich expands the tabs, counting from the start of each line.
            text = Text.assemble(*((segment.text, segment.style or "") for segment in segments))
            self.console.print(text, no_wrap=True, overflow="ignore", crop=False)
        else:
            # The segments that print would write: unwrapped and uncropped, rich would only cut the
            # text into lines and join them again (a tenth of `why --all` on 5,000 kills).
            self.console.print(Segments([*segments, Segment("\n")]), crop=False)


class _Layout(Frozen):
    """How a block of rows is laid out: the spaces between columns, the right-aligned columns,
    and whether the last column wraps (and how a word longer than it is cut)."""

    gap: int
    right: frozenset[int] = frozenset()
    wrap_last: bool = True
    overflow: OverflowMethod = "fold"


_FACTS = _Layout(gap=2)
_MEMORY = _Layout(gap=1, overflow="ellipsis")
_TIMELINE = _Layout(gap=2, right=frozenset({0}), overflow="ellipsis")


def _table(rows: list[list[Text]], layout: _Layout) -> Table:
    """The rows as a rich Table: what `_laid_out` draws without it, and what lays out the rows
    it cannot."""
    table = Table(box=None, pad_edge=False, show_header=False, padding=(0, layout.gap, 0, 0))
    for index in range(len(rows[0]) if rows else 0):
        last = index == len(rows[0]) - 1 and layout.wrap_last
        table.add_column(
            justify="right" if index in layout.right else "left",
            no_wrap=not last,
            overflow=layout.overflow if last else "ellipsis",
        )
    for row in rows:
        table.add_row(*row)
    return table


def _laid_out(rows: list[list[Text]], layout: _Layout, console: Console) -> Segments | None:
    """The rows as `_table` draws them on this console (each column as wide as its widest cell,
    the last one wrapped in the width left), as the segments rich would render for them, lines
    apart by newlines (no newline at the end): rich's layout pass measured every cell of every
    table twice, and building one rich Text a block to render took a third of `why --all`'s time
    on a log of thousands of kills. None when the columns before the last do not fit the width:
    then the table decides."""
    if not rows:
        return Segments([])
    count = len(rows[0])
    fixed = count - 1 if layout.wrap_last else count
    widths = [max(row[i].cell_len for row in rows) for i in range(fixed)]
    indent = sum(widths) + layout.gap * (count - 1)
    room = console.width - indent
    if room < (1 if layout.wrap_last else 0):
        return None
    spacer = Segment(" " * layout.gap)
    newline = Segment("\n")
    styles: dict[str | Style, Style | None] = {"": None}
    out: list[Segment] = []
    cell_segments = partial(_segments, out, styles, console)
    for number, row in enumerate(rows):
        if number:
            out.append(newline)
        for index, width_i in enumerate(widths):
            cell = row[index]
            pad = width_i - cell.cell_len
            if index in layout.right:
                if pad:
                    out.append(Segment(" " * pad))
                cell_segments(cell)
            else:
                cell_segments(cell)
                if pad:
                    out.append(Segment(" " * pad))
            if index < count - 1:
                out.append(spacer)
        if not layout.wrap_last:
            continue
        last = row[-1]
        if last.cell_len <= room and "\t" not in last.plain and "\n" not in last.plain:
            cell_segments(last)  # what wrap would give
            continue
        lines = _plain_lines(last, room, layout.overflow)
        if lines is not None:
            style = console.get_style(last.style) if last.style else None
            parts = [Segment(line, style) for line in lines]
            out.append(parts[0])
            for part in parts[1:]:
                out += (newline, Segment(" " * indent), part)
            continue
        for part_number, text in enumerate(last.wrap(console, room, overflow=layout.overflow)):
            if part_number:
                out += (newline, Segment(" " * indent))
            cell_segments(text)
    return Segments(out)


def _segments(
    out: list[Segment], styles: dict[str | Style, Style | None], console: Console, cell: Text
) -> None:
    """A cell's segments as its line's render gives them: a styled stretch is one segment (on a
    colour terminal each segment gets its own escape codes), an unstyled one may be split. A
    cell of spans one after another (a chart's line) is cut at them here: rich's render sorts
    its spans' ends and combines styles for every stretch."""
    plain = cell.plain
    spans = cell.spans
    if not spans:
        if plain:
            out.append(Segment(plain, _style(styles, console, cell.style)))
        return
    at = 0
    for start, end, _ in spans:
        if start < at or end < start:
            break
        at = end
    else:
        if not cell.style and at <= len(plain):
            at = 0
            for start, end, style in spans:
                if start > at:
                    out.append(Segment(plain[at:start]))
                if end > start:
                    out.append(Segment(plain[start:end], _style(styles, console, style)))
                at = end
            if at < len(plain):
                out.append(Segment(plain[at:]))
            return
    out.extend(cell.render(console))


def _style(styles: dict[str | Style, Style | None], console: Console, name: str | Style) -> Style | None:
    """The console's style of that name (None for none), remembered for the block."""
    style = styles.get(name, _UNKNOWN)
    if style is _UNKNOWN:
        style = styles[name] = console.get_style(name, default=Style.null()) or None
    return style


_UNKNOWN = Style()


def _plain_lines(text: Text, width: int, overflow: OverflowMethod) -> list[str] | None:
    """The lines of `text.wrap(console, width, overflow=overflow)`, as strings, without its cost
    in the common case (a text of one style and no tab in characters one cell wide each; None
    otherwise): rich's word splitting measured each word's cells twice, and made a Text of each
    line."""
    plain = text.plain
    if (
        text.spans
        or "\t" in plain
        or "\n" in plain
        or text.justify is not None
        or text.overflow is not None
        or text.no_wrap is not None
        or not _narrow(plain)
    ):
        return None
    starts = [0, *_breaks(plain, width, fold=overflow == "fold"), len(plain)]
    lines = []
    for start, end in itertools.pairwise(starts):
        line = plain[start:end]
        if len(line) > width:  # Text.rstrip_end: blanks past the width go
            blanks = _TRAILING_BLANKS.search(line)
            if blanks is not None:
                line = line[: -min(len(blanks.group(0)), len(line) - width)]
        if len(line) > width:  # Text.truncate
            line = line[: width - 1] + "…" if overflow == "ellipsis" else line[:width]
        lines.append(line)
    return lines


def _breaks(text: str, width: int, fold: bool) -> list[int]:
    """rich's `_wrap.divide_line` for text whose every character is one cell wide: where the
    lines start after the first, a word never split unless it is longer than a line (then cut at
    the width with `fold`, else left to the truncation)."""
    breaks: list[int] = []
    offset = 0  # cells used on the current line
    for word in _WORD.finditer(text):
        start, end = word.span()
        length = len(word.group(0).rstrip())
        if width - offset >= length:
            offset += end - start
        elif length > width:
            if fold:
                # chop_cells: pieces of `width` characters, the last one starts the new line.
                last = start + (end - start - 1) // width * width
                breaks.extend(range(start, last + 1, width) if start else range(width, last + 1, width))
                offset = end - last
            else:
                if start:
                    breaks.append(start)
                offset = end - start
        elif offset and start:
            breaks.append(start)
            offset = end - start
    return breaks


@lru_cache(maxsize=4096)
def _narrow_character(character: str) -> bool:
    return get_character_cell_size(character) == 1


def _narrow(text: str) -> bool:
    """Whether every character takes one cell, so that cells are counted as characters."""
    return (text.isascii() and text.isprintable()) or all(map(_narrow_character, set(text)))


_WORD = re.compile(r"\s*\S+\s*")  # rich's _wrap.re_word: a word and the blanks around it
_TRAILING_BLANKS = re.compile(r"\s+$")


def _fact_rows(facts: tuple[Fact, ...]) -> list[list[Text]]:
    """A bold label and a value that folds: the shape of every fact list."""
    return [
        [Text(fact.label, style="bold"), _t(fact.brief or fact.value, _TONES[fact.tone])] for fact in facts
    ]


def _grid() -> Table:
    """Two columns, a bold label and a value that folds: the shape of every fact list."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    return grid


# The widest a host column is: a host is cut, never a victim.
_HOST_W = 12


def _list_layout(names: list[str], widths: list[int], width: int) -> tuple[int, int] | None:
    """The columns the list's table keeps (the first so many) and the padding after each, for
    the widest table that fits `width` whole; None where none does (a kill a few lines)."""
    counts = [len(names)]
    if names[-1] == "trigger":
        counts.append(len(names) - 1)
    for shown in counts:
        for gap in (1, 0):
            # Each column but the last is followed by its padding and the rule's one space.
            if sum(widths[:shown]) + (gap + 1) * (shown - 1) <= width:
                return shown, gap
    return None
