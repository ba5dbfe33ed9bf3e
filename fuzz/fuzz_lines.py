"""Coverage-guided fuzzing (atheris) of the whole line pipeline: prefixes, grammar, episodes, JSON.

Run: python fuzz/fuzz_lines.py -max_total_time=300 fixtures/*/  (seeds: the shipped reports).
tests/test_fuzz.py runs it for a bounded time in CI.
"""

from __future__ import annotations

import io
import json
import sys

import atheris

with atheris.instrument_imports():
    from dateutil import tz
    from rich.console import Console

    from oomtrace.episodes import EpisodeBuilder
    from oomtrace.formats.json import JsonFormat
    from oomtrace.formats.text import TextFormat
    from oomtrace.listview import list_view
    from oomtrace.prefixes import LineSplitter
    from oomtrace.rejoin import parse_records


def one_input(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    builder = EpisodeBuilder()
    builder.begin_source("fuzz", "file")
    splitter = LineSplitter("fuzz", zone=tz.UTC, year=2026)
    records = (r for n, line in enumerate(text.split("\n"), start=1) for r in splitter.split(line, n))
    for record, event in parse_records(records):
        builder.feed(record, event)
    analysis = builder.finish()
    out = io.StringIO()
    view = list_view(analysis)
    JsonFormat(Console(file=out)).list_episodes(analysis, view)
    json.loads(out.getvalue())
    TextFormat(Console(file=io.StringIO(), width=80)).list_episodes(analysis, view)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
