"""The terminal report (rich): readable at 80 columns, plain when piped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from oomtrace.formats.base import Format
from oomtrace.listview import HostsView, ListView
from oomtrace.model import Analysis
from oomtrace.sanitize import inert
from oomtrace.storyview import Fact, Grid, MemoryView, ReportView, ServerLogView, StoryView, WhyView
from oomtrace.units import clock_time
from oomtrace.verdict import Verdict

if TYPE_CHECKING:
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
        # Numbers and times are never cut: they keep their width; names wrap, the trigger goes
        # when the row cannot hold it, and a terminal too narrow for any table gets one line a kill.
        widths = [max([len(name), *(len(r[i]) for r in rows)]) for i, name in enumerate(names)]
        # A column takes its width, its right padding and the rule between columns.
        fixed = sum(w + 2 for name, w in zip(names, widths, strict=True) if name not in _NAME_COLUMNS)
        hosted = names.index("host") if "host" in names else None
        host_w = min(widths[hosted], 12) + 2 if hosted is not None else 0
        trigger_w = min(widths[-1], 16)
        victim_w = self.console.width - fixed - host_w - trigger_w - 2
        if victim_w < _MIN_NAME or hosted is not None:
            columns, rows, names = columns[:-1], [r[:-1] for r in rows], names[:-1]
            victim_w = self.console.width - fixed - host_w - 2
        if victim_w < _MIN_NAME:
            self._list_lines(analysis, view, rows, names)
            return
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
        for (name, justify), width in zip(columns, widths, strict=False):
            if name in _NAME_COLUMNS:
                limit = {"victim": victim_w, "trigger": trigger_w, "host": host_w - 2}[name]
                table.add_column(name, justify=justify, overflow="fold", width=min(width, limit))  # type: ignore[arg-type]
            else:
                table.add_column(name, justify=justify, no_wrap=True, width=width)  # type: ignore[arg-type]
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
        if view.rows:
            self.console.print(_section(view.title, Grid(view.header, view.align, view.rows)))
        else:
            self.console.print(_t(view.empty))
        self.console.print(_t(view.footer), style="dim")

    def boots(self, boots: list[Boot]) -> None:
        for boot in boots:
            first = clock_time(boot.first) if boot.first else "?"
            last = clock_time(boot.last) if boot.last else "?"
            self.console.print(_t(f"{boot.index:>4}  {boot.boot_id}  {first} \u2014 {last}"), no_wrap=True)

    def why(self, analysis: Analysis, view: WhyView) -> None:
        if view.stories:
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
                self.console.print(Text("The OOM kill it took part in", style="bold"))
                self._story(view.involved)
        self.console.print(_t(view.footer), style="dim")

    def _server_log(self, log: ServerLogView) -> None:
        grid = _facts(log.facts)
        grid.add_row("Its last line", _t(log.last_line))
        self.console.print(Group(Text(), Text("The server's own log", style="bold"), grid))

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
        for story in view.stories:
            self.console.print()
            self._story(story)
        self.console.print(_t(view.footer), style="dim")

    def not_found(self, analysis: Analysis, query: str, verdict: Verdict) -> None:
        # The one-line error on stderr says it all; stdout stays empty for scripts.
        return None

    def _story(self, story: StoryView) -> None:
        headline = Text()
        headline.append(_t(story.who, "bold"))
        headline.append(_t(story.what + (f"; {story.ending}" if story.ending else "")))
        self.console.print(Panel(headline, title=_t(story.title), title_align="left"))
        self.console.print(_facts(story.facts))
        if story.server_log is not None:
            self._server_log(story.server_log)
        if story.memory is not None:
            self.console.print(self._memory(story.memory))
        if story.holders is not None:
            self.console.print(_section("Largest processes at the kill", story.holders))
        if story.timeline.rows:
            self.console.print(self._timeline(story.timeline))

    def _memory(self, memory: MemoryView) -> Group:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column()
        grid.add_row(" ", _t(" · ".join(f"{label} {amount}" for label, amount in memory.figures)))
        for note in memory.notes:
            grid.add_row(" •", _t(note))
        return Group(Text(), Text("Memory at the kill", style="bold"), grid)

    def _timeline(self, timeline: Grid) -> Group:
        table = Table(box=None, pad_edge=False, show_header=False, padding=(0, 1))
        table.add_column(no_wrap=True, justify="right")
        table.add_column(no_wrap=True)
        table.add_column()
        for offset, when, kind, event in timeline.rows:
            table.add_row(_t(offset), _t(when), _t(event, _TIMELINE_STYLES.get(kind, "")))
        return Group(Text(), Text("Timeline", style="bold"), table)


def _facts(facts: tuple[Fact, ...]) -> Table:
    grid = _grid()
    for fact in facts:
        grid.add_row(fact.label, _t(fact.brief or fact.value, _TONES[fact.tone]))
    return grid


def _section(title: str, grid: Grid) -> Group:
    """A small table under a bold title, numbers right-aligned as the view says."""
    table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0))
    for name, align in zip(grid.header, grid.align, strict=True):
        table.add_column(name, justify="right" if align == "r" else "left", no_wrap=align == "r")
    for row in grid.rows:
        table.add_row(*(_t(cell) for cell in row))
    return Group(Text(), Text(title, style="bold"), table)


def _grid() -> Table:
    """Two columns, a bold label and a value that folds: the shape of every fact list."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    return grid


# Columns of names, which may wrap; every other column holds a number or a time.
_NAME_COLUMNS = ("victim", "trigger", "host")
# The narrowest a name column may be before the layout gives it up.
_MIN_NAME = 6
