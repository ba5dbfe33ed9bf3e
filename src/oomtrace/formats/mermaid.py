"""Charts drawn as Mermaid blocks, which GitHub renders in issues, comments and Markdown files.

Log text (process and host names) reaches these blocks, so every label is written with Mermaid's
entity codes (`#58;` for a colon) for anything outside a small safe set: a name can neither end a
statement, open a comment, close the fence nor carry HTML.
"""

from __future__ import annotations

import json
import math
import re

from oomtrace.charts import Bars, RunUp, ShareChart, Trace
from oomtrace.sanitize import inert

_UNSAFE = re.compile(r"[^A-Za-z0-9 .,_+\-/()'×±=!?]")


def label(value: str) -> str:
    """Text for inside a Mermaid label: inert, each unsafe character as its entity code."""
    return _UNSAFE.sub(lambda m: f"#{ord(m.group())};", inert(value).replace("\n", " "))


def _block(lines: list[str]) -> str:
    # Every label is entity-coded, so no backtick can reach the block to close its fence.
    return "\n".join(["```mermaid", *lines, "```"])


def pie(chart: ShareChart) -> str:
    """A pie of the parts; each label carries its size, since a pie alone shows only shares.
    Each kind of part keeps its colour whichever parts a chart has (Mermaid colours slices in
    order, and its default palette gave the page cache a near-white slice)."""
    colours = {f"pie{n}": _PART_COLOURS[part.key] for n, part in enumerate(chart.parts, 1)}
    lines = [_init({"themeVariables": colours}), "pie", f"    title {label(chart.title)}"]
    for part, words in zip(chart.parts, chart.legend(), strict=True):
        lines.append(f'    "{label(words)}" : {part.kb}')
    return _block(lines)


def timeline(chart: RunUp) -> str:
    """The run-up as a Mermaid timeline: one period per moment, its records beside it."""
    lines = ["timeline", f"    title {label(chart.title)}"]
    periods: dict[tuple[str, str], list[str]] = {}
    for event in chart.events:
        periods.setdefault((event.offset, event.clock), []).append(event.text)
    for (offset, clock), texts in periods.items():
        lines.append(f"    {label(offset)} {label(clock)} : " + " : ".join(label(t) for t in texts))
    return _block(lines)


def bars(chart: Bars) -> str:
    """Counts as a horizontal xychart: a row a bucket or host, so that every label is drawn
    whole however many there are (side by side, seven dated labels ran into one strip). The
    count axis runs to at least 10, so that its ticks are whole kills (to 3 they were 0.2s)."""
    axis = ", ".join(f'"{label(name)}"' for name in chart.labels)
    top = max(max(chart.counts), 10)
    # Room for each row's label: Mermaid's default 500 px squeezes 24 rows into 20 px each.
    height = max(300, _ROW_PX * len(chart.labels) + 120)
    palette = {"xyChart": {"plotColorPalette": _BAR_COLOUR}}
    return _block(
        [
            _init({"xyChart": {"height": height}, "themeVariables": palette}),
            "xychart-beta horizontal",
            f'    title "{label(chart.title)}"',
            f"    x-axis [{axis}]",
            f'    y-axis "kills" 0 --> {top}',
            f"    bar [{', '.join(str(n) for n in chart.counts)}]",
        ]
    )


def samples(chart: Trace) -> list[str]:
    """The watcher's samples as xychart lines over a numeric axis of time before the kill:
    MemAvailable in one chart, PSI some and full in another (an xychart has one y-axis). The
    warnings are bars the height of the chart where they began (xychart has no markers)."""
    points = chart.points
    minutes = chart.every_s >= 60
    scale_x = 60 if minutes else 1
    x_axis = (
        f'    x-axis "{"minutes" if minutes else "seconds"} before the kill" '
        f"{-points[0].before_s / scale_x:g} --> {-points[-1].before_s / scale_x:g}"
    )
    top_kb = max(p.memavailable_kb for p in points)
    unit, scale = ("GiB", 1 << 20) if top_kb >= 2 << 20 else ("MiB", 1 << 10)
    available = [round(p.memavailable_kb / scale, 1) for p in points]
    top = max(math.ceil(max(available)), 1)
    blocks = [_xychart(f"MemAvailable ({unit})", x_axis, f'"{unit}" 0 --> {top}', top, chart, [available])]
    if chart.has_pressure:
        series = [[p.psi_some or 0.0 for p in points]]
        if chart.has_full:
            series.append([p.psi_full or 0.0 for p in points])
        title = "Memory pressure, PSI avg10 in per cent"
        title += ", some above and full below" if chart.has_full else ""
        blocks.append(_xychart(title, x_axis, '"per cent" 0 --> 100', 100, chart, series))
    return blocks


# The lines' colours, then the warnings' bars': Mermaid's default palette starts with a pale
# blue that a white page hardly shows.
_LINE_COLOURS = ("#1f77b4", "#d62728")
_MARK_COLOUR = "#dddddd"
# Bars and slices in colours that stand out (3:1 or more, WCAG's figure for graphics) against
# both GitHub's white page and its dark one (#0d1117).
_BAR_COLOUR = "#2f6db5"
_PART_COLOURS = {
    "anon": "#2f6db5",
    "file": "#c8711f",
    "slab": "#3a9a5b",
    "pagetables": "#9467bd",
    "free": "#8c8c8c",
    "unaccounted": "#d62728",
    "other": "#1597ab",
}
_ROW_PX = 26


def _init(config: dict[str, object]) -> str:
    """Mermaid's per-diagram configuration line."""
    return f"%%{{init: {json.dumps(config)}}}%%"


def _xychart(title: str, x_axis: str, y_axis: str, top: int, chart: Trace, series: list[list[float]]) -> str:
    marked = any(p.warnings for p in chart.points)
    colours = ([_MARK_COLOUR] if marked else []) + list(_LINE_COLOURS[: len(series)])
    palette = '{"themeVariables": {"xyChart": {"plotColorPalette": "' + ", ".join(colours) + '"}}}'
    lines = [f"%%{{init: {palette}}}%%", "xychart-beta", f'    title "{label(title)}"']
    lines += [x_axis, f"    y-axis {y_axis}"]
    if marked:
        lines.append(f"    bar [{', '.join(str(top if p.warnings else 0) for p in chart.points)}]")
    lines += [f"    line [{', '.join(f'{v:g}' for v in values)}]" for values in series]
    return _block(lines)
