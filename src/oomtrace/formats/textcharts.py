"""Charts for the terminal: a stacked bar of memory, bars of counts and sparklines of samples,
in block characters.

Each part of a stacked bar has a glyph of its own as well as a colour, so the picture still reads
with colour off (piped, NO_COLOR) and in the golden files.
"""

from __future__ import annotations

from rich.text import Text

from oomtrace.charts import Bars, ShareChart, Trace
from oomtrace.sanitize import inert
from oomtrace.units import kib

# (glyph, colour) for each part in the order they come; the memory no process's RSS shows is
# the one a reader looks for, so its glyph is the solid one and its colour the loud one.
_GLYPHS = {
    "unaccounted": ("█", "red"),
    "anon": ("▓", "magenta"),
    "file": ("▒", "green"),
    "slab": ("▞", "yellow"),
    "pagetables": ("▚", "cyan"),
    "free": ("░", "bright_white"),
}
_OTHER = ("·", "blue")
# A bar never draws wider than this, however wide the terminal.
_MAX_WIDTH = 72


def stacked_bar(chart: ShareChart, width: int) -> list[Text]:
    """The bar, then its legend packed into lines of `width`: glyph, part, size, share."""
    width = max(10, min(width, _MAX_WIDTH))
    cells = _cells([p.kb for p in chart.parts], width)
    bar = Text()
    legend: list[Text] = []
    for part, count, words in zip(chart.parts, cells, chart.legend(), strict=True):
        glyph, colour = _GLYPHS.get(part.key, _OTHER)
        bar.append(glyph * count, style=colour)
        item = Text()
        item.append(glyph, style=colour)
        item.append(f" {words}")
        legend.append(item)
    return [bar, *_packed(legend, width)]


def bar_rows(chart: Bars, width: int) -> list[Text]:
    """One row a bucket: its label, a bar scaled to the largest count, and the count."""
    labels = [inert(name) for name in chart.labels]
    label_w = min(max(len(name) for name in labels), 24)
    number_w = len(f"{max(chart.counts):,}")
    room = max(width - label_w - number_w - 2, 4)
    room = min(room, _MAX_WIDTH)
    top = max(chart.counts) or 1
    rows = []
    for name, count in zip(labels, chart.counts, strict=True):
        shown = name if len(name) <= label_w else name[: label_w - 1] + "…"
        line = Text(shown.ljust(label_w) + " ")
        # A bucket with kills always shows at least one block: "some" must never look like "none".
        blocks = max(round(room * count / top), 1 if count else 0)
        line.append("█" * blocks, style="red")
        line.append(" " * (room - blocks) + " " + f"{count:,}".rjust(number_w))
        rows.append(line)
    if chart.note:
        rows.append(Text(inert(chart.note), style="dim"))
    return rows


_LEVELS = "▁▂▃▄▅▆▇█"
# Past this many, the warnings under a sparkline are counted, not listed.
_MARKS_LISTED = 3


def sparklines(chart: Trace) -> list[Text]:
    """A row a series: its name, one level a point (MemAvailable against its highest, PSI against
    100 %), and its first and last values; then ▲ under the points where a warning began."""
    points = chart.points
    top = max(p.memavailable_kb for p in points) or 1
    rows = [
        _spark(
            "MemAvailable",
            [p.memavailable_kb / top for p in points],
            f"{kib(points[0].memavailable_kb)} → {kib(points[-1].memavailable_kb)}",
            "green",
        )
    ]
    if chart.has_pressure:
        some = [p.psi_some or 0.0 for p in points]
        ends = f"{some[0]:.1f}% → {some[-1]:.1f}%"
        rows.append(_spark("PSI some", [v / 100 for v in some], ends, "yellow"))
    if chart.has_full:
        full = [p.psi_full or 0.0 for p in points]
        ends = f"{full[0]:.1f}% → {full[-1]:.1f}%"
        rows.append(_spark("PSI full", [v / 100 for v in full], ends, "red"))
    marks = chart.marks()
    if marks:
        under = "".join("▲" if p.warnings else " " for p in points)
        rows.append(Text((" " * 14 + under).rstrip(), style="bold"))
        listed = [inert(m) for m in marks[:_MARKS_LISTED]]
        more = f" and {len(marks) - _MARKS_LISTED:,} more" if len(marks) > _MARKS_LISTED else ""
        rows.append(Text("▲ " + "; ".join(listed) + more, style="dim"))
    return rows


def _spark(name: str, shares: list[float], ends: str, colour: str) -> Text:
    line = Text(name.ljust(13) + " ")
    levels = "".join(_LEVELS[min(max(round(share * 7), 0), 7)] for share in shares)
    line.append(levels, style=colour)
    line.append(f"  {ends}")
    return line


def _cells(sizes: list[int], width: int) -> list[int]:
    """Cells per part, adding up to `width` (largest remainders get the spare cells)."""
    total = sum(sizes) or 1
    exact = [width * size / total for size in sizes]
    cells = [int(x) for x in exact]
    spare = width - sum(cells)
    for index in sorted(range(len(sizes)), key=lambda i: exact[i] - cells[i], reverse=True)[:spare]:
        cells[index] += 1
    return cells


def _packed(items: list[Text], width: int) -> list[Text]:
    """Legend items side by side, two spaces apart, never one split over two lines."""
    lines: list[Text] = []
    line = Text()
    for item in items:
        if line.cell_len and line.cell_len + 2 + item.cell_len > width:
            lines.append(line)
            line = Text()
        if line.cell_len:
            line.append("  ")
        line.append_text(item)
    if line.cell_len:
        lines.append(line)
    return lines
