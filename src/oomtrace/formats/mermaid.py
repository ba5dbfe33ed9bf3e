"""Charts drawn as Mermaid blocks, which GitHub renders in issues, comments and Markdown files.

Log text (process and host names) reaches these blocks, so every label is written with Mermaid's
entity codes (`#58;` for a colon) for anything outside a small safe set: a name can neither end a
statement, open a comment, close the fence nor carry HTML.
"""

from __future__ import annotations

import re

from oomtrace.charts import Bars, RunUp, ShareChart
from oomtrace.sanitize import inert

_UNSAFE = re.compile(r"[^A-Za-z0-9 .,_+\-/()'×±=!?]")


def label(value: str) -> str:
    """Text for inside a Mermaid label: inert, each unsafe character as its entity code."""
    return _UNSAFE.sub(lambda m: f"#{ord(m.group())};", inert(value).replace("\n", " "))


def _block(lines: list[str]) -> str:
    # Every label is entity-coded, so no backtick can reach the block to close its fence.
    return "\n".join(["```mermaid", *lines, "```"])


def pie(chart: ShareChart) -> str:
    """A pie of the parts; each label carries its size, since a pie alone shows only shares."""
    lines = ["pie", f"    title {label(chart.title)}"]
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
    """Counts as an xychart bar chart (the x labels are the buckets or hosts)."""
    axis = ", ".join(f'"{label(name)}"' for name in chart.labels)
    top = max(chart.counts)
    return _block(
        [
            "xychart-beta",
            f'    title "{label(chart.title)}"',
            f"    x-axis [{axis}]",
            f'    y-axis "kills" 0 --> {max(top, 1)}',
            f"    bar [{', '.join(str(n) for n in chart.counts)}]",
        ]
    )
