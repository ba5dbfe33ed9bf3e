"""The terminal format lays out its fact lists, timelines and small tables itself (rich's table
layout was most of `why --all`'s time): the lines must be those rich's Table draws."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from oomtrace.formats.text import (
    _FACTS,
    _MEMORY,
    _TIMELINE,
    TextFormat,
    _laid_out,
    _Layout,
    _plain_lines,
    _table,
)

WORDS = st.text(alphabet="abcdefghij·… ←-", min_size=0, max_size=30)
CELL = st.lists(WORDS, min_size=1, max_size=4).map(" ".join)


def _rich(rows: list[list[Text]], layout: _Layout) -> Table:
    """What the format drew before it laid rows out itself: its fact and memory grids and its
    timeline table; its small tables were the format's fallback table (`_table`)."""
    if layout is _FACTS or layout is _MEMORY:
        table = Table.grid(padding=(0, layout.gap))
    elif layout is _TIMELINE:
        table = Table(box=None, pad_edge=False, show_header=False, padding=(0, 1))
    else:
        return _table(rows, layout)
    for index in range(len(rows[0])):
        last = index == len(rows[0]) - 1
        table.add_column(
            justify="right" if index in layout.right else "left",
            no_wrap=not last,
            overflow=layout.overflow if last else "ellipsis",
        )
    for row in rows:
        table.add_row(*row)
    return table


def _lines(width: int, renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, width=width, highlight=False).print(renderable)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


@settings(max_examples=300, deadline=None)
@given(
    width=st.integers(40, 140),
    layout=st.sampled_from(
        [_FACTS, _MEMORY, _TIMELINE, _Layout(gap=2, right=frozenset({1, 2}), wrap_last=False)]
    ),
    columns=st.integers(2, 4),
    data=st.data(),
)
def test_the_layout_draws_what_richs_table_draws(
    width: int, layout: _Layout, columns: int, data: st.DataObject
) -> None:
    if layout in (_FACTS, _MEMORY):
        columns = 2
    elif layout is _TIMELINE:
        columns = 3
    # Offsets, times, labels and numbers: no blank at either end.
    short = st.text(alphabet="abcT-+0123456789 ", min_size=0, max_size=14).map(str.strip)
    rows = data.draw(
        st.lists(
            st.tuples(*([short] * (columns - 1)), CELL if layout.wrap_last else short), min_size=1, max_size=6
        )
    )
    rows = [list(row) for row in rows]
    console = Console(file=io.StringIO(), width=width)
    cells = [[Text(c) for c in row] for row in rows]
    ours = _laid_out(cells, layout, console)
    if ours is None:
        return  # too wide for the fixed columns: the format hands it to rich's table
    assert _lines(width, ours) == _lines(width, _rich(cells, layout))
    # ...and the fallback for rows that do not fit draws the same where they do.
    assert _lines(width, ours) == _lines(width, _table(cells, layout))


STYLES = st.sampled_from(["", "bold", "dim", "yellow", "bold red", "red"])


def _composed(rows: list[list[Text]], layout: _Layout, console: Console) -> Text:
    """What the format built before it wrote segments itself: each line one rich Text, the cells
    appended and the last one wrapped by rich (the oracle for the bytes on a colour terminal)."""
    count = len(rows[0])
    fixed = count - 1 if layout.wrap_last else count
    widths = [max(row[i].cell_len for row in rows) for i in range(fixed)]
    indent = sum(widths) + layout.gap * (count - 1)
    room = console.width - indent
    lines: list[Text] = []
    for row in rows:
        line = Text()
        for index, width_i in enumerate(widths):
            pad = " " * (width_i - row[index].cell_len)
            if index in layout.right:
                line.append(pad)
                line.append_text(row[index])
            else:
                line.append_text(row[index])
                line.append(pad)
            if index < count - 1:
                line.append(" " * layout.gap)
        if not layout.wrap_last:
            lines.append(line)
            continue
        for number, part in enumerate(row[-1].wrap(console, room, overflow=layout.overflow)):
            if number:
                line = Text(" " * indent)
            line.append_text(part)
            lines.append(line)
    return Text("\n").join(lines)


def _charted(words: str, style: str) -> Text:
    """A cell with spans inside it, as the memory bar and its legend are."""
    text = Text(style=style)
    for number, word in enumerate(words.split(" ")):
        text.append(word + " ", style="magenta" if number % 2 else "")
    return text


@settings(max_examples=300, deadline=None)
@given(
    width=st.integers(30, 140),
    title=st.sampled_from(["", "Timeline"]),
    layout=st.sampled_from(
        [_FACTS, _MEMORY, _TIMELINE, _Layout(gap=2, right=frozenset({1}), wrap_last=False)]
    ),
    rows=st.lists(
        st.tuples(WORDS, STYLES, st.sampled_from(["", "\t", "x\ty"]), CELL, STYLES, st.booleans()),
        min_size=1,
        max_size=6,
    ),
)
def test_a_laid_out_block_prints_the_bytes_rich_prints_for_it(
    width: int, title: str, layout: _Layout, rows: list[tuple[str, str, str, str, str, bool]]
) -> None:
    """TextFormat._print writes the block's segments itself: the same bytes, styles and all, on a
    colour terminal, as printing the Text it used to build (a tab in a cell too: rich expands it)."""
    count = 3 if layout is _TIMELINE else 2
    cells = []
    for a, sa, tab, b, sb, charted in rows:
        last = _charted(b, sb) if charted else Text(b, style=sb)
        first = [Text(a.strip(), style=sa), Text(tab, style=sa)][: count - 1]
        cells.append([*first, last])
    if _laid_out(cells, layout, Console(file=io.StringIO(), width=width)) is None:
        return  # too wide for the labels: rich's table draws it, as before

    def printed(ours: bool) -> str:
        out = io.StringIO()
        console = Console(file=out, width=width, force_terminal=True, color_system="truecolor")
        if ours:
            TextFormat(console)._print(cells, layout, title)
        else:
            text = _composed(cells, layout, console)
            if title:
                text = Text("\n").join([Text(), Text(title, style="bold"), text])
            console.print(text, no_wrap=True, overflow="ignore", crop=False)
        return out.getvalue()

    assert printed(True) == printed(False)


@settings(max_examples=500, deadline=None)
@given(
    text=st.text(alphabet="ab cd\u00a0·…←x", min_size=0, max_size=120)
    | st.lists(st.text(alphabet="abc", min_size=0, max_size=25), max_size=12).map(" ".join)
    | st.text(alphabet="a 漢字\u0301\t", max_size=40),
    style=STYLES,
    width=st.integers(1, 30),
    overflow=st.sampled_from(["fold", "ellipsis"]),
)
def test_wrapping_gives_the_lines_richs_wrap_gives(text: str, style: str, width: int, overflow: str) -> None:
    """The format's own word wrap for one-cell characters is rich's, line for line (wide and
    combining characters and tabs go to rich's own)."""
    console = Console(file=io.StringIO(), width=80)
    cell = Text(text, style=style)
    theirs = cell.wrap(console, width, overflow=overflow)  # type: ignore[arg-type]
    lines = _plain_lines(cell, width, overflow)  # type: ignore[arg-type]
    # As _laid_out does: the format's own lines where it has them, rich's wrap where it has none.
    ours = [Text(line, style=cell.style) for line in lines] if lines is not None else list(theirs)
    assert [(line.plain, line.style, line.spans) for line in ours] == [
        (line.plain, line.style, line.spans) for line in theirs
    ]


def test_text_why_says_which_of_several_kills_it_tells(tmp_path: Path) -> None:
    """Issue 39: for a name killed several times the terminal's story did not say it tells the
    last of them (JSON and Markdown did, docs/sources.md promises it for all)."""
    from datetime import timedelta

    from tests.conftest import FIXTURES, run
    from tests.test_charts import _crash_loop

    log = _crash_loop(tmp_path / "loop.log", 3, timedelta(minutes=7))
    text = run("why", "llama-server", "-k", str(log), "--tz", "UTC", "--year", "2026").stdout
    assert " ".join(text.split()).startswith(
        "The last of 3 kills of llama-server in the log (oomtrace why llama-server --all tells each)."
    )
    once = run("why", "llama-server", "-k", str(FIXTURES / "seed000_llama_server_gb10" / "kernel.log")).stdout
    assert "The last of" not in once
